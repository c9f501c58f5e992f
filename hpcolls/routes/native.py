"""The native route: collectives of device buffers on hpcolls' own barrier-free kernels, and where
their limits send a call. One place decides, for every collective the kernels carry
(routes/collectives.py: Allreduce, Bcast, Reduce, Allgather, Reduce_scatter_block,
Reduce_scatter), in this order:

0. hierarchical, where the ranks span several nodes (real, or emulated with HPCOLLS_NODE_SIZE):
   Allreduce, Bcast, Reduce and Allgather that the node's kernels carry run native inside each
   node and as bounded MPI messages between the nodes (hpcolls/hierarchy/). The flat native
   path is never opened there (CUDA IPC reaches one node only), so steps 1 and 3 do not apply:
   what the hierarchy does not take (Reduce_scatter(_block), larger messages) goes to 2 or 4;
1. native: the kernels take the whole call (device buffers on the communicator's GPU, peers that
   reach each other's memory, a message within the kernel's scratch, a type and op it carries,
   a buffer spec it can read); the plan (native/include/hpcolls/plan.h) decides and the launch
   says whether it took the call;
2. nccl: past the native limit, or a call the kernels do not carry, where every rank has its own
   GPU and NCCL has the collective for the type and op (HPCOLLS_ALGO auto or nccl);
3. pieces: the native kernels in pieces of the largest message they take, element ranges of the
   message (of every block), each still combined in rank order, so bit for bit the whole call;
4. mpi: the MPI routes (routes/__init__.py), except float16/bfloat16 reductions, which MPI has no
   datatype for: every rank's input gathered and reduced on the host in rank order.

`HPCOLLS_DEBUG=INFO` logs each choice once per collective, route and size class, with why.
"""
from collections import namedtuple

from .. import dtypes, hierarchy, log
from ..methods import METHODS
from .collectives import COLLECTIVES
from .mpi_staged import reduce_rank_order

# The collectives in the native layer's order (hpcolls._native.COLLECTIVES, the plan's index).
NATIVE_ORDER = ("allreduce", "allgather", "bcast", "reduce", "reduce_scatter")

Choice = namedtuple("Choice", "route why piece_bytes")


def past_native(plan, itemsize, algo, native_off, nccl, refusal=None):
    """Where a call goes that the native kernels did not take whole: a Choice of "nccl",
    "pieces" (of piece_bytes each) or "mpi", and why.

    plan: (pieces, piece_bytes[, protocol]) of the call's native plan (0 pieces: the kernels do not
    carry it; protocol: the pieces' protocol, named in the reason),
    None where the native path is off (`native_off` says why); itemsize: bytes of one element;
    nccl(): (NCCL takes the call, why not), asked only where HPCOLLS_ALGO allows NCCL (the first
    ask sets NCCL up); refusal: why the kernels take this call at no size (None: size decides)."""
    in_pieces = False
    if refusal:
        native_why = refusal
    elif plan is None:
        native_why = f"native path off: {native_off}"
    elif plan[0] == 0 or plan[1] < itemsize:
        native_why = "not a call the native kernels carry"
    else:
        protocol = f", {plan[2]} protocol" if len(plan) > 2 else ""
        native_why, in_pieces = f"larger than the native kernels take in one call ({plan[1]} B{protocol})", True
    why = f"HPCOLLS_ALGO={algo}"
    if algo in ("auto", "nccl"):
        takes, not_nccl = nccl()
        if takes:
            return Choice("nccl", native_why, 0)
        why = f"NCCL: {not_nccl}"
    if in_pieces:
        return Choice("pieces", f"{native_why}; {why}", plan[1])
    return Choice("mpi", f"{native_why}; {why}", 0)


def choice(paths, collective, call, stream):
    """The Choice for `call` (a DeviceCall of `collective`) on a communicator's open DevicePaths
    (hpcolls/device_paths.py): "hierarchical" (why: the scheme) where the ranks span nodes and that
    path takes it, "native" (why: the kernel) where the kernels take it whole, else past_native's.
    Collective where it sets NCCL up."""
    nc = paths.native
    refusal = collective.refusal(call)
    if paths.hierarchy is not None:
        takes, how = paths.hierarchy.takes(collective, call)
        if takes:
            return Choice("hierarchical", how, call.nbytes)
        refusal = refusal or how
    plan = None
    if nc is not None:
        p = nc.plan(call.nbytes, call.code, call.op, NATIVE_ORDER.index(collective.native))
        if p["pieces"] == 1 and refusal is None:
            return Choice("native", f"{p['kernel']}, {p['protocol']} protocol", call.nbytes)
        plan = (p["pieces"], p["piece_bytes"], p["protocol"])
    return past_native(plan, dtypes.ITEMSIZE[call.code], paths.config.algo, paths.off,
                       lambda: paths.nccl_path(stream).takes(collective, call), refusal)


def route_of(comm, name, *args, stream=0, **kwargs):
    """The Choice that mpi4py's `name` (one of COLLECTIVES) called with these arguments on device
    buffers would get, launching nothing; collective where it opens the native path or sets NCCL
    up, as the call would. For tests and tools."""
    collective = COLLECTIVES[name]
    found = collective.read(comm, METHODS[name], args, kwargs)
    if isinstance(found, str):
        return Choice("mpi", found, 0)
    return choice(comm.device_paths(found.device, stream), collective, found, stream)


def call(comm, method, args, kwargs, stream):
    """Makes mpi4py's `method` call (one of COLLECTIVES) with device buffers on `stream` where this
    route carries it, and says whether it did; False: the MPI routes make it."""
    collective = COLLECTIVES[method.name]
    method.check_arguments(args, kwargs)  # mpi4py never sees them on this route
    found = collective.read(comm, method, args, kwargs)
    if isinstance(found, str):
        log.info_once((method.name, "mpi", found), f"{method.name} on device buffers: MPI ({found})")
        return False
    c = found
    paths = comm.device_paths(c.device, stream)  # the first device call opens them (collective)
    nc = paths.native
    if nc is not None and collective.refusal(c) is None and collective.launch(nc, c, stream):
        if log.level >= 2:
            _log(method, c, choice(paths, collective, c, stream))
        return True
    chosen = choice(paths, collective, c, stream)
    if chosen.route == "hierarchical":
        paths.hierarchy.make(collective, c, stream)
    elif chosen.route == "nccl":
        collective.nccl(paths.nccl, c, stream)
    elif chosen.route == "pieces":
        collective.in_pieces(nc, c, chosen.piece_bytes, stream)
    elif collective.reduces and c.code in (dtypes.F16, dtypes.BF16):
        reduce_rank_order(comm, c, *collective.host_result(c, comm.Get_rank()), stream)
        chosen = chosen._replace(route="mpi, reduced on the host in rank order (MPI has no such datatype)")
    else:
        _log(method, c, chosen)
        return False
    _log(method, c, chosen)
    return True


def _log(method, call, chosen):
    if log.level >= 2:
        what = "" if not COLLECTIVES[method.name].reduces else f" {dtypes.NAMES[call.code]} {dtypes.OP_NAMES[call.op]}"
        log.info_once((method.name, chosen.route, call.nbytes.bit_length()),
                      f"{method.name} {call.nbytes} B{what}: {chosen.route} ({chosen.why})")


def route_lines(nodes, cfg, cuda_aware):
    """`python -m hpcolls info`'s lines: the route each collective of this module takes on device
    buffers over a communicator on `nodes` (a NodeHierarchy) under `cfg`, as `choice` decides it
    (described from the settings and the node shape: nothing is opened, so a path that cannot
    open on this machine, such as one without cupy, is not foreseen)."""
    mpi = "MPI directly (CUDA-aware)" if cuda_aware else "MPI staged through host memory"
    flat = f"NCCL where every rank has its own GPU and NCCL has the type and op, else {mpi}"
    if cfg.algo in ("nccl", "mpi"):
        return [f"every collective: {flat if cfg.algo == 'nccl' else mpi} (HPCOLLS_ALGO={cfg.algo})"]
    if len(nodes.nodes) == 1:
        native = (f"native kernels; past their limit NCCL where every rank has its own GPU, else the kernels in "
                  f"pieces; what they do not carry: {flat}")
        return [f"{name}: {native}" for name in COLLECTIVES]
    off = hierarchy.settings_refusal(nodes, cfg)
    if off:
        return [f"{name}: {flat} (no hierarchical path: {off}; no CUDA IPC between nodes)" for name in COLLECTIVES]
    lines = []
    for name, collective in COLLECTIVES.items():
        if collective.native not in hierarchy.CARRIED or (collective.native == "allgather" and not nodes.consecutive):
            lines.append(f"{name}: {flat} (not on the hierarchical path; no CUDA IPC between nodes)")
            continue
        how = f", {hierarchy.scheme_line(nodes, cfg)}" if collective.native == "allreduce" else ""
        lines.append(f"{name}: hierarchical{how} (native in each node, bounded MPI between them) while the node's "
                     f"kernels carry the message; larger or not carried: {flat}")
    return lines
