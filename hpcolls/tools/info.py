"""`python -m hpcolls info`: what this process (and, under mpiexec, every rank) can use."""
import os
import platform
import socket

from mpi4py import MPI

from .. import __version__, config, hierarchy, native_module, settings, tuned_table
from ..binding import select_device
from ..peer_group import ranks_sharing_gpu
from ..routes.native import route_lines
from ..staging import cuda_aware, pmpi_library


def mpi_library():
    """The first line of the MPI library's version string. Open MPI counts the C string's closing
    NUL in its length, so mpi4py's string ends in one (grep then calls the output binary): the text
    is cut there."""
    return MPI.Get_library_version().split("\0", 1)[0].strip().splitlines()[0]


def _version(module):
    try:
        mod = __import__(module)
        return getattr(mod, "__version__", "?")
    except ImportError:
        return "not installed"


def _nccl_version():
    try:
        from cupy.cuda import nccl
        v = nccl.get_version()
        return f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    except Exception as exc:  # noqa: BLE001 - any failure means "not usable here"
        return f"unavailable ({exc.__class__.__name__})"


def _cuda_line():
    try:
        native = native_module.load()
    except native_module.NativeModuleMissing:
        return "native module not built"
    fmt = lambda v: f"{v // 1000}.{v % 1000 // 10}" if v else "none"  # noqa: E731
    return (f"runtime {fmt(native.runtime_version())} (static, built with {fmt(native.CUDART_VERSION_BUILT)}), "
            f"driver {fmt(native.driver_version())}")


def _gpus():
    n = native_module.device_count()
    if n == 0:
        if native_module.native_available():
            return [native_module.load().no_device_reason()]
        return ["none (native module not built)"]
    return [f"{i['index']}: {i['name']} cc {i['compute_capability'][0]}.{i['compute_capability'][1]}, "
            f"{i['sm_count']} SMs, {i['total_memory'] / 2**30:.0f} GiB, {i['pci_bus_id']}, {i['uuid']}"
            for i in map(native_module.load().device_info, range(n))]


def _my_gpu():
    """The GPU this rank would use (hpcolls.binding's choice), as 'index uuid' or 'none'."""
    if native_module.device_count() == 0:
        return "none"
    try:
        d = select_device(MPI.COMM_WORLD)
    except Exception as exc:  # noqa: BLE001
        return f"? ({exc})"
    if d is None:
        return "none"
    return f"GPU {d} {native_module.load().device_info(d)['uuid']}"


def _stream_reader():
    try:
        import cupy  # noqa: F401  (the reader is cupy's)
        return native_module.load().cupy_stream_reader()
    except ImportError as exc:  # no cupy, or NativeModuleMissing
        return f"none ({exc})"


def _node_lines(comm, cfg, aware):
    """The node groups of COMM_WORLD and the route each device-buffer collective takes on it
    (collective: every rank builds the groups)."""
    try:
        h = hierarchy.node_hierarchy(comm, cfg.node_size)
    except ValueError as exc:
        return [f"node groups: {exc}"]
    lines = [f"node groups: {h.describe()}; leaders {h.leaders}:",
             *[f"  node {i}: world ranks {members}" for i, members in enumerate(h.nodes)],
             "routes of device-buffer collectives over COMM_WORLD:",
             *[f"  {line}" for line in route_lines(h, cfg, aware)]]
    h.free()
    return lines


def _limit(value):
    return "the selection table's" if value is None else f"{value} B (set)"


def _row_line(r):
    keys = [k for k in r if k not in ("collective", "max_ranks")]
    return f"{r['collective']} <= {r['max_ranks']} ranks: " + ", ".join(f"{k} {'-' if r[k] is None else r[k]}" for k in keys)


def table_in_force(comm, cfg):
    """The selection table a communicator over `comm` would run under (hpcolls/tuned_table.py), as
    its set-up decides it; collective. Built-in where some rank has no GPU (a tuned table applies
    to the GPUs it was measured on)."""
    try:
        native = native_module.load()
    except native_module.NativeModuleMissing:
        native = None
    device = select_device(comm) if native is not None and native_module.device_count() > 0 else None
    if not comm.allreduce(device is not None, op=MPI.LAND):
        return tuned_table.InForce(reason="no GPU on every rank: a tuned table applies to the GPUs it was measured on")
    uuid = native.device_info(device)["uuid"]
    return tuned_table.agreed(comm, native, device, ranks_sharing_gpu(comm, uuid), cfg.tune_file)


def table_lines(in_force):
    """Which selection table is in force and where it came from, then its rows: the tuned rows
    first, then the built-in rows of what they do not replace (bytes, '-' no limit)."""
    builtin = config.selection_table()
    if not builtin:
        return ["selection table: (the native module is not built)"]
    lines = [f"selection table in force over COMM_WORLD: {in_force.describe()}"]
    if not in_force.tuned:
        return lines + ["  built-in rows (native/hpcolls/plan.cpp; bytes, '-' no limit):",
                        *[f"    {_row_line(r)}" for r in builtin]]
    tuned = {r["collective"] for r in in_force.rows}
    return lines + ["  tuned rows (python -m hpcolls tune; bytes, '-' no limit):",
                    *[f"    {_row_line(r)}" for r in in_force.rows],
                    "  built-in rows of the other collectives (native/hpcolls/plan.cpp):",
                    *[f"    {_row_line(r)}" for r in builtin if r["collective"] not in tuned]]


def report():
    native = native_module.load()
    comm = MPI.COMM_WORLD
    mapping = comm.gather((comm.Get_rank(), socket.gethostname(), os.getpid(), _my_gpu()), root=0)
    aware, how = cuda_aware()
    cfg = config.Config.from_env(comm.Get_size())
    nodes = _node_lines(comm, cfg, aware)
    in_force = table_in_force(comm, cfg)
    if comm.Get_rank() != 0:
        return None
    lines = [
        f"hpcolls {__version__}  (python {platform.python_version()}, numpy {_version('numpy')}, "
        f"mpi4py {_version('mpi4py')}, cupy {_version('cupy')})",
        f"CUDA: {_cuda_line()}",
        f"NCCL: {_nccl_version()}",
        f"MPI: {mpi_library()}",
        f"MPI CUDA-aware: {'yes' if aware else 'no'} ({how})",
        f"PMPI staging library (mpi4py's Message, Datatype.Pack*, Op.Reduce_local): {pmpi_library.status_line()}",
        f"Allreduce on cupy arrays reads the current stream by: {_stream_reader()}",
        "GPUs visible:",
        *[f"  {g}" for g in _gpus()],
        f"rank -> GPU ({comm.Get_size()} ranks):",
        *[f"  rank {r} on {h} pid {p}: {g}" for r, h, p, g in mapping],
        *nodes,
        f"settings: algo={cfg.algo} scratch={cfg.scratch_bytes} B per rank per communicator "
        f"(HPCOLLS_SCRATCH_BYTES; one-shot carries up to scratch/4/N bytes), "
        f"protocol={cfg.protocol} (HPCOLLS_PROTOCOL), sentinel region {cfg.sentinel_scratch_bytes} B, LL128 region "
        f"{cfg.ll128_scratch_bytes} B, "
        f"one-shot <= {_limit(cfg.oneshot_max_bytes)} (its small-message kernel at {', '.join(map(str, native.SMALL_ONESHOT_RANKS))} "
        f"ranks: a block per {native.SMALL_ONESHOT_BLOCK_BYTES} B, up to the rank's share of the SMs), two-shot <= {_limit(cfg.twoshot_max_bytes)} "
        f"(larger: NCCL, or where it cannot run the native kernels in pieces), "
        f"timeout={cfg.timeout_s} s, validate={cfg.validate}, "
        f"dependent launch={'on' if cfg.dependent_launch else 'off'} (HPCOLLS_DEPENDENT_LAUNCH, default 1; used on GPUs of compute capability 9.0+, "
        f"where ranks share a GPU only for grids of at most half a rank's share of the SMs)",
        *table_lines(in_force),
        "environment (hpcolls.settings; README has what each means):",
        *[f"  {line}" for line in settings.current_lines()],
    ]
    return "\n".join(lines)
