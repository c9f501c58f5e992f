"""Which GPU this rank uses: node-local rank → device index, with the reasons logged.

Codes written for "one rank per GPU" usually do `cudaSetDevice(local_rank % ndev)` and silently
put two contexts on one GPU when the job has more ranks per node than GPUs. Without CUDA MPS those
contexts time-slice (a 0.5 µs ping-pong becomes milliseconds), which looks like a hang for a
latency-bound collective. So here oversubscription is an error unless MPS is running or the user
says sharing is intended.

Everything that decides is a pure function of its arguments (tested on CPU); `select_device`
only gathers the facts (launcher variables, communicator, device count, MPS pipe) and applies it.
"""
import os
import sys
from typing import NamedTuple, Optional

from . import log, native_module, settings
from .errors import HpcollsError  # a RuntimeError

ALLOW_SHARING_VAR = "HPCOLLS_ALLOW_GPU_SHARING"
DEVICE_VAR = "HPCOLLS_DEVICE"
DEFAULT_MPS_PIPE_DIRECTORY = "/tmp/nvidia-mps"
_bound_sharing = None  # ranks of this node that select_device() bound to this process's GPU (None: unknown)

# (local rank, local size) variables per launcher, in the order they are trusted. A launcher's own
# variables come before Slurm's: `mpirun` started inside an `sbatch` script inherits the batch
# step's SLURM_LOCALID=0 in every rank, whereas OMPI_*/MV2_*/PMI_* are set by whoever actually
# started this process. A size of None means the launcher does not export one.
_LAUNCHER_VARS = (
    ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE"),
    ("MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE"),
    ("MPI_LOCALRANKID", "MPI_LOCALNRANKS"),  # MPICH / Intel MPI hydra
    ("PMI_LOCAL_RANK", "PMI_LOCAL_SIZE"),  # Cray PALS, some PMI-2 launchers
)


class LocalPlacement(NamedTuple):
    rank: int
    size: Optional[int]  # None: the launcher told us the rank but not how many share the node
    source: str  # where the numbers came from, for the log


def _slurm_tasks_on_this_node(env):
    """This node's task count from Slurm, or None.

    SLURM_NTASKS_PER_NODE exists only when --ntasks-per-node was given; otherwise the step's
    compressed per-node list ("4(x2),3") is indexed by SLURM_NODEID.
    """
    if env.get("SLURM_NTASKS_PER_NODE", "").isdigit():
        return int(env["SLURM_NTASKS_PER_NODE"])
    compressed = env.get("SLURM_STEP_TASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE")
    node = env.get("SLURM_NODEID", "")
    if not compressed or not node.isdigit():
        return None
    counts = []
    for item in compressed.split(","):
        count, _, repeat = item.partition("(x")
        counts += [int(count)] * (int(repeat.rstrip(")")) if repeat else 1)
    return counts[int(node)] if int(node) < len(counts) else None


def placement_from_env(env=None):
    """Node-local rank and size from launcher variables, or None if no launcher set any."""
    env = os.environ if env is None else env
    for rank_var, size_var in _LAUNCHER_VARS:
        if env.get(rank_var, "").isdigit():
            size = env.get(size_var, "")
            return LocalPlacement(int(env[rank_var]), int(size) if size.isdigit() else None, rank_var)
    if env.get("SLURM_LOCALID", "").isdigit():
        return LocalPlacement(int(env["SLURM_LOCALID"]), _slurm_tasks_on_this_node(env), "SLURM_LOCALID")
    return None


def _node_facts(comm, mine):
    """Placement in the shared-memory split of `comm`, and `mine` from every rank of this node.

    Collective over `comm`: every rank calls it, whatever it holds, so that no rank can wait alone.
    """
    from mpi4py import MPI  # here, not at the top: `import hpcolls` imports this module and starts no MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        placement = LocalPlacement(node.Get_rank(), node.Get_size(), "shared-memory split of the communicator")
        return placement, node.allgather(mine)
    finally:
        node.Free()


def placement_from_comm(comm):
    """Rank and size within the shared-memory split of `comm`. Collective over `comm`."""
    return _node_facts(comm, None)[0]


def local_placement(comm=None, env=None):
    """Node-local placement with its source.

    Given a communicator, its shared-memory split is the truth: the launcher's variables describe
    the whole job, which may not be `comm` (a sub-communicator, a spawned job, a wrong launcher
    guess). A disagreement is logged, because the user's own binding code, if any, will be using
    the variables. Without a communicator the launcher's variables are used, then COMM_WORLD's
    split if MPI is already initialised (we never initialise MPI here).
    """
    from_env = placement_from_env(env)
    if comm is None:
        if from_env is not None:
            return from_env
        mpi = sys.modules.get("mpi4py.MPI")
        if mpi is not None and mpi.Is_initialized() and not mpi.Is_finalized():
            return placement_from_comm(mpi.COMM_WORLD)
        return LocalPlacement(0, 1, "no launcher variables and no MPI: assuming one process")
    return _prefer_split(from_env, placement_from_comm(comm))


def _prefer_split(from_env, from_comm):
    if from_env is not None and (from_env.rank, from_env.size) != (from_comm.rank, from_comm.size):
        # Another count means the variables describe other processes than `comm` has; the same
        # count in another order is only a different numbering, which is worth a note, not a
        # warning (Open MPI 5, 4 ranks on a 2-core host: world ranks 1 and 2 get local ranks 2, 1).
        report = log.warn if from_env.size not in (None, from_comm.size) else log.info
        report(f"binding: {from_env.source} says local rank {from_env.rank} of {from_env.size}, "
               f"but the communicator's shared-memory split says {from_comm.rank} of {from_comm.size}; "
               f"using the split")
    return from_comm


def local_rank_and_size(comm=None, env=None):
    """(local rank, local size); see `local_placement`. Collective over `comm` when one is given."""
    placement = local_placement(comm, env)
    return placement.rank, placement.size


def mps_active(env=None, default_pipe_directory=DEFAULT_MPS_PIPE_DIRECTORY):
    """Whether a CUDA MPS control daemon serves this process.

    A client talks to the daemon through `<pipe directory>/control`, the directory being
    CUDA_MPS_PIPE_DIRECTORY when set (and then only that one) or the default. Its presence means a
    daemon was started; it is not proof the daemon is healthy, but a dead one fails loudly at
    context creation, unlike time-slicing which only fails slowly.
    """
    env = os.environ if env is None else env
    directory = env.get("CUDA_MPS_PIPE_DIRECTORY") or default_pipe_directory
    return os.path.exists(os.path.join(directory, "control"))


def choose_device(local_rank, local_size, ndev, mps_active, allow_oversubscribe):
    """Device index for `local_rank` of `local_size` ranks on a node with `ndev` visible GPUs.

    Round-robin (`local_rank % ndev`), which is what one-rank-per-GPU codes already do. When
    ranks outnumber GPUs that is only allowed under MPS or with explicit consent, because without
    MPS the contexts sharing a GPU time-slice. `local_size=None` (unknown) is checked as if only
    ranks 0..local_rank existed.
    """
    if ndev < 1:
        raise ValueError(f"choose_device needs at least one GPU, got ndev={ndev}")
    size = local_rank + 1 if local_size is None else local_size
    if not 0 <= local_rank < size:
        raise ValueError(f"local rank {local_rank} is outside 0..{size - 1}")
    if size > ndev and not (mps_active or allow_oversubscribe):
        raise HpcollsError(
            f"{size} ranks on this node but only {ndev} GPU(s) visible, and CUDA MPS is not running: "
            f"ranks sharing a GPU without MPS time-slice and small collectives become milliseconds. "
            f"Start MPS on each node (nvidia-cuda-mps-control -d; see jobs/sygvd_mps.sbatch), or use "
            f"at most {ndev} rank(s) per node, or set {ALLOW_SHARING_VAR}=1 if sharing is intended.")
    return local_rank % ndev


def one_gpu_per_task(ndev, local_size, env=None, peers=None):
    """Whether the single visible GPU is this task's own, not one shared by the node's ranks.

    Under Slurm's --gpus-per-task=1, or a wrapper setting CUDA_VISIBLE_DEVICES per rank, every
    task sees exactly one GPU, often as index 0 in all of them, so "4 ranks, 1 GPU" is normal there.
    `peers`, the identities (UUID or PCI bus id) of the GPU each rank of the node sees, settles it:
    all different means one each. Without them, Slurm's SLURM_GPUS_PER_TASK=1 is taken as the
    answer. A lone rank on a node owns what it sees.
    """
    env = os.environ if env is None else env
    if ndev != 1:
        return False
    if local_size == 1:
        return True
    if peers and None not in peers:
        return len(set(peers)) == len(peers)
    return env.get("SLURM_GPUS_PER_TASK", "").strip() == "1"


def ranks_bound_to_this_gpu():
    """How many ranks of this node select_device() bound to this process's GPU, counting ranks
    outside any one communicator (a process grid's row and column communicators share their GPU
    with every rank of the job); None when select_device() has not said."""
    return _bound_sharing


def _visible_gpu_count():
    """GPUs this process sees: hpcolls' native count, else cupy's.

    Without the native module hpcolls reports 0, yet cupy arrays still run on the GPU (through
    NCCL/MPI): binding still matters then, or every rank of a node lands on GPU 0.
    """
    count = native_module.device_count()
    if count:
        return count
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no cupy, no driver, no device: all mean none visible
        return 0


def _gpu_identity(index=0):
    """A name for visible device `index` that is the same in every process seeing it, or None."""
    try:
        return native_module.load().device_info(index)["uuid"]
    except Exception:  # no native module (NativeModuleMissing), or it cannot query: try cupy
        pass
    try:
        import cupy
        return cupy.cuda.Device(index).pci_bus_id
    except Exception:
        return None


def _use_with_cupy(device):
    try:
        import cupy
    except ImportError:
        return False
    cupy.cuda.Device(device).use()
    return True


def select_device(comm=None):
    """Pick, make current (through cupy when it is installed) and return this rank's GPU index.

    Returns None when no GPU is visible (host-only run). Collective over `comm` when one is given:
    call it on every rank of `comm`, before the first CUDA work. Pass the communicator of all the
    job's ranks (COMM_WORLD, usually): ranks of a smaller one would be numbered, and bound, as if
    they had the node's GPUs to themselves. With a communicator the ranks of a node also compare
    which GPU each one sees, which tells one-GPU-per-task apart from ranks sharing a GPU.
    """
    global _bound_sharing
    env = os.environ
    ndev = _visible_gpu_count()
    peers = None
    if comm is None:
        placement = local_placement(None)
    else:
        split, peers = _node_facts(comm, _gpu_identity() if ndev == 1 else None)
        placement = _prefer_split(placement_from_env(), split)
    visible = env.get("CUDA_VISIBLE_DEVICES")
    where = f"local rank {placement.rank} of {placement.size} (from {placement.source}), " \
            f"{ndev} GPU(s) visible (CUDA_VISIBLE_DEVICES={visible if visible is not None else 'unset'})"

    if settings.is_set(DEVICE_VAR):
        forced = env[DEVICE_VAR]
        if not forced.strip().isdigit() or int(forced) >= ndev:
            raise HpcollsError(f"{DEVICE_VAR}={forced!r} is not a device index below the {ndev} visible GPU(s)")
        device, why = settings.get(DEVICE_VAR), f"{DEVICE_VAR} is set"
        bound_here = None  # other ranks may have forced the same device: not known here
    elif ndev == 0:
        log.info(f"binding: {where}; running on the host")
        return None
    elif one_gpu_per_task(ndev, placement.size, peers=peers):
        device, why = 0, "one GPU per task: the only visible device"
        bound_here = 1
    else:
        sharing = mps_active()
        allowed = settings.get(ALLOW_SHARING_VAR)
        device = choose_device(placement.rank, placement.size, ndev, sharing, allowed)
        why = f"local rank mod {ndev}"
        if placement.size is None or placement.size > ndev:
            why += ", GPUs shared " + ("under MPS" if sharing else f"without MPS ({ALLOW_SHARING_VAR}=1)")
        bound_here = None if placement.size is None else sum(1 for r in range(placement.size) if r % ndev == device)
    _bound_sharing = bound_here
    made_current = _use_with_cupy(device)
    log.info(f"binding: {where}; device {device} ({why})"
             + ("" if made_current else "; cupy not installed, device not made current here"))
    return device
