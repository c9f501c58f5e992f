"""Where a buffer call goes, one module per route:

- host: host buffers, to mpi4py unchanged (no CUDA call);
- native: Allreduce, Bcast, Reduce, Allgather, Reduce_scatter_block and Reduce_scatter of device
  buffers on the native kernels (peers reachable through CUDA IPC), whole or in pieces, or on
  NCCL where every rank has its own GPU; native.py decides (collectives.py reads each call);
  where the ranks span several nodes, it hands Allreduce, Bcast, Reduce and Allgather to the
  hierarchy (hpcolls/hierarchy/): native inside each node, bounded MPI messages between them;
- nccl: what the native route hands NCCL;
- mpi_direct: device buffers to a CUDA-aware MPI, after the caller's stream;
- mpi_staged: device buffers through host memory, the copies ordered on the stream.

`call` picks the route for any method of hpcolls.methods' table.
"""
from mpi4py import MPI

from .. import buffers, hierarchy, log, validation
from ..staging import cuda_aware, pmpi_library
from ..streams import stream_ptr
from ..methods import MESSAGE_METHODS, METHODS
from . import host, mpi_direct, mpi_staged, native


def device_arguments(method, args, kwargs, rank):
    """({parameter: (DeviceArray, role)} of the device buffers MPI uses on this rank, [parameters
    holding device buffers that MPI ignores here])."""
    used, ignored = method.roles(args, kwargs, rank)
    device = {}
    for name, role in used.items():
        arr = buffers.device_array(method.argument(args, kwargs, name))
        if arr is not None:
            device[name] = (arr, role)
    unused = [name for name in ignored if buffers.device_array(method.argument(args, kwargs, name)) is not None]
    return device, unused


def call(comm, method, target, args, kwargs, stream, validate=True):
    """mpi4py's `method` of `target` (the communicator, or a Message of it) on these arguments,
    through the route their buffers need. `comm` is the hpcolls communicator (its settings and
    staging pool); `stream` is the call's `stream=` argument, read only for device buffers."""
    if validate and method.collective and comm.config.validate:
        validation.check(comm, method, args, kwargs)
    base = getattr(method.owner, method.name)
    device, unused = device_arguments(method, args, kwargs, MPI.Comm.Get_rank(comm))
    if not device and not unused:
        return host.call(method, base, target, args, kwargs)
    stream = stream_ptr(stream)
    pmpi_library.warn_if_needed()
    if target is comm and method.name in native.COLLECTIVES and native.call(comm, method, args, kwargs, stream):
        return None
    aware, how = cuda_aware()
    if aware:
        log.info_once((method.name, "direct"), f"{method.name} on device buffers: MPI directly, after the stream ({how})")
        return mpi_direct.call(method, base, target, args, kwargs, stream)
    log.info_once((method.name, "staged"), f"{method.name} on device buffers: MPI, staged through "
                  f"{comm.staging_pool.kind} host memory ({how})")
    return mpi_staged.call(comm.staging_pool, method, base, target, args, kwargs, device, unused, stream)


def _staged(method):
    if method.completion == "persistent":
        return "raises InvalidBufferError naming the method"
    if method.completion == "blocking":
        return "mpi_staged; buffers it writes copied back as it returns"
    if method.collective:
        return "mpi_staged, completed inside the call (its request is done)"
    return ("mpi_staged; buffers it writes copied back when the request completes, by whatever completes it "
            "(Wait, Test, MPI.Request.Waitall, Testany, ...)")


def _native(method, mpi):
    """The native route's cell of the route table, the rest going to `mpi`."""
    collective = native.COLLECTIVES[method.name]
    nodes = "hierarchical, then NCCL" if collective.native in hierarchy.CARRIED else "NCCL"
    past = f"(then NCCL, the kernels in pieces; ranks over several nodes: {nodes})"
    if not collective.reduces:
        return f"native kernels, any predefined contiguous type as bytes {past}; else {mpi}"
    return (f"native kernels for the types and ops they carry {past}; else {mpi} "
            "(float16, bfloat16: reduced on the host in rank order)")


def route_table():
    """docs/DROP_IN.md's table: per method, the route of each kind of buffer (tests keep the
    page equal to this)."""
    rows = ["| method | host buffers (numpy, array, DLPack CPU, CAI on host) | device, CUDA-aware MPI | "
            "device, MPI not CUDA-aware |", "| --- | --- | --- | --- |"]
    owners = {"Comm": "", "Intracomm": "", "Topocomm": " (Cartcomm, Graphcomm, Distgraphcomm)", "Message": " (Mprobe's)"}
    every = [*((m, owner) for owner in ("Comm", "Intracomm", "Topocomm") for m in METHODS.values()
               if m.owner.__name__ == owner), *((m, "Message") for m in MESSAGE_METHODS.values())]
    for method, owner in every:
        name = f"Message.{method.name}" if owner == "Message" else method.name
        if owner != "Message" and method.name in native.COLLECTIVES:
            rows.append(f"| `{name}` | mpi4py, unchanged | {_native(method, 'mpi_direct')} | "
                        f"{_native(method, 'mpi_staged')}; buffers it writes copied back as it returns |")
            continue
        rows.append(f"| `{name}`{owners[owner]} | mpi4py, unchanged | mpi_direct: after the stream | {_staged(method)} |")
    rows += [f"| `{name}` (mpi4py's own{', Message.Probe' if name.startswith('Message') else ''}) | mpi4py, unchanged | "
             f"mpi4py, unchanged | {how} |" for name, how in PMPI_STAGED.items()]
    return "\n".join(rows)


# mpi4py's own calls that no communicator method sees, staged where MPI is not CUDA-aware by the
# PMPI staging library when it is preloaded (hpcolls/staging/pmpi_library.py; without it they crash there).
_BY_LIBRARY = "PMPI staging library (LD_PRELOAD): staged through host memory"
PMPI_STAGED = {
    "Message.Recv": f"{_BY_LIBRARY}, copied back as it returns",
    "Message.Irecv": f"{_BY_LIBRARY}: received at once, its request already complete (with the receive's status)",
    **{f"Datatype.{name}": f"{_BY_LIBRARY}, copied back as it returns"
       for name in ("Pack", "Unpack", "Pack_external", "Unpack_external")},
    "Op.Reduce_local": f"{_BY_LIBRARY}, copied back as it returns",
}
