"""What each of the benchmark's algorithms calls, on the same buffers:

- auto: hpcolls' own route for the call (routes/native.py: the native kernels whole or in pieces,
  NCCL past their limit where every rank has its own GPU, MPI for what they do not carry);
- oneshot, twoshot: Allreduce with the algorithm forced (the other collectives have one kernel:
  these rows are Allreduce's only);
- nccl: NCCL called directly (hpcolls' NcclPath), where it runs (one rank per GPU);
- mpi-device: device buffers through MPI as hpcolls carries them with its native path off
  (HPCOLLS_ALGO=mpi): staged through host memory on an MPI that is not CUDA-aware, handed over
  after the stream on one that is;
- mpi: mpi4py on host buffers (numpy), what the program would call without GPUs;
- ll, sentinel, ll128 (--protocol): hpcolls' own route with HPCOLLS_PROTOCOL forced to that
  protocol, each on a communicator of its own; a row is skipped, with the reason printed once,
  where the plan does not run the call on that protocol (LL128 where its probe has not shown whole
  lines, a collective without a kernel on it);
- copy: a device-to-device copy of the row's bytes on each rank (cudaMemcpyAsync), the memory
  floor the protocols are measured against.
"""
from mpi4py import MPI

from ... import dtypes, settings
from ...communicator import Communicator
from ...methods import METHODS
from ...routes.collectives import COLLECTIVES
from ...routes.native import route_of
from ...routes.nccl import NcclPath
from . import cases

PROTOCOL_ALGOS = ("ll", "sentinel", "ll128")  # HPCOLLS_PROTOCOL's forced values
GPU_ALGOS = ("auto", "oneshot", "twoshot", "nccl", "mpi-device", "mpi", *PROTOCOL_ALGOS, "copy")
HPCOLLS_ALGOS = ("auto", "oneshot", "twoshot", *PROTOCOL_ALGOS)
PLAN_PROTOCOL = {"ll": "LL", "sentinel": "sentinel", "ll128": "LL128"}  # as the native plan names them

COMMS = {}
_NCCL = {}


def communicator(algo, dependent_launch=None, env=None):
    """The run's hpcolls communicator over COMM_WORLD for `algo` (HPCOLLS_ALGO's values), made on
    first use; with dependent_launch True/False, one of its own made with HPCOLLS_DEPENDENT_LAUNCH
    set so; with `env` ({HPCOLLS_* name: value}), one of its own made with those settings. A
    communicator reads its settings at its first use: that happens here, while they hold."""
    env = dict(env or {})
    if dependent_launch is not None:
        env["HPCOLLS_DEPENDENT_LAUNCH"] = str(int(dependent_launch))
    key = "-".join([algo, *(f"{name}={value}" for name, value in sorted(env.items()))])
    if key not in COMMS:
        with settings.overridden(env):
            COMMS[key] = Communicator(MPI.COMM_WORLD, algo=algo)
            COMMS[key].config  # noqa: B018 - reads the settings now, while `env` holds
    return COMMS[key]


def nccl_peer(cupy):
    """hpcolls' own NcclPath over COMM_WORLD (called directly in the timing loop), or None where
    NCCL cannot run (not installed, or ranks sharing a GPU)."""
    if "path" not in _NCCL:
        _NCCL["path"] = NcclPath(MPI.COMM_WORLD, cupy.cuda.Device().id)
    path = _NCCL["path"]
    return path if path.comm is not None else None


def release():
    """Frees the run's communicators and NCCL (collective), so a later run makes its own."""
    for c in COMMS.values():
        c.close()
    COMMS.clear()
    if _NCCL.get("path") is not None:
        _NCCL["path"].destroy()
    _NCCL.clear()


_SKIPPED = set()


def _skip(algo, coll, why):
    """None, printing (rank 0, once per algorithm, collective and route) why `algo` has no such row."""
    key = (algo, coll, why.split(":")[0])
    if key not in _SKIPPED and MPI.COMM_WORLD.rank == 0:
        print(f"# {algo} rows of {coll} skipped from here on where: {why}", flush=True)
    _SKIPPED.add(key)
    return None


def protocol_caller(protocol, coll, case):
    """caller() for a forced protocol: hpcolls' route on a communicator with HPCOLLS_PROTOCOL set,
    or None (the reason printed) where that route does not run the call's kernels on that protocol
    (the route's reason names the plan's protocol: routes/native.py). Every rank reads the same
    plan, so every rank skips alike."""
    found = hpcolls_caller(communicator("auto", env={"HPCOLLS_PROTOCOL": protocol}), cases.METHOD[coll], case)
    _, route, why = found
    if route in ("native", "pieces") and f"{PLAN_PROTOCOL[protocol]} protocol" in why:
        return found
    if protocol == "ll128":
        return _skip(protocol, coll, "LL128 does not carry it here: its probe has not shown 128-byte lines arriving "
                                     f"whole on this machine, or it has no kernel for {coll} ({route}: {why})")
    return _skip(protocol, coll, f"the call does not run on {PLAN_PROTOCOL[protocol]} here ({route}: {why})")


def copy_caller(cupy, case_bytes):
    """A device-to-device copy of `case_bytes` on this rank, on cupy's current stream (capturable)."""
    from ... import native_module
    native = native_module.load()
    src, dst = cupy.ones(case_bytes, dtype=cupy.uint8), cupy.zeros(case_bytes, dtype=cupy.uint8)
    return (lambda: native.memcpy_async(dst.data.ptr, src.data.ptr, case_bytes, cupy.cuda.get_current_stream().ptr),
            "memcpy", f"cudaMemcpyAsync of {case_bytes} B, device to device (the memory floor)")


def caller(cupy, algo, coll, case, size=0):
    """(a callable making one call of `coll` on the Case's buffers through `algo`, the route it
    takes, more about it) or None where that algorithm has no such call here. `size`: the row's
    bytes (the copy's)."""
    method = cases.METHOD[coll]
    if algo in PROTOCOL_ALGOS:
        return protocol_caller(algo, coll, case)
    if algo == "copy":
        return copy_caller(cupy, size)
    if algo in HPCOLLS_ALGOS or algo == "mpi-device":
        if algo in ("oneshot", "twoshot") and coll != "allreduce":
            return None
        found = hpcolls_caller(communicator("mpi" if algo == "mpi-device" else algo), method, case)
        if algo == "mpi-device":
            return found[0], "mpi", "HPCOLLS_ALGO=mpi: the MPI routes"
        return found
    if algo == "nccl":
        return _nccl_caller(cupy, coll, case)
    fn = getattr(MPI.COMM_WORLD, method)  # mpi: host buffers
    return (lambda: fn(*case.args, **case.kwargs)), "mpi", "mpi4py on host buffers"


def hpcolls_caller(comm, method, case):
    """(a callable making mpi4py's `method` on the Case's buffers through hpcolls communicator
    `comm`, the route it takes, why)."""
    chosen = route_of(comm, method, *case.args, **case.kwargs)  # opens the native path: its entries first
    fn = getattr(comm, method)
    return (lambda: fn(*case.args, **case.kwargs)), chosen.route, chosen.why


def _nccl_caller(cupy, coll, case):
    path = nccl_peer(cupy)
    if path is None:
        return None
    method = cases.METHOD[coll]
    collective = COLLECTIVES[method]
    call = collective.read(MPI.COMM_WORLD, METHODS[method], case.args, case.kwargs)
    if isinstance(call, str) or not path.takes(collective, call)[0]:
        return None
    run = getattr(path, collective.native)
    return (lambda: run(call, cupy.cuda.get_current_stream().ptr)), "nccl", f"NCCL, {dtypes.NAMES[call.code]}"
