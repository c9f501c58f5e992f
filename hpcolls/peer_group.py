"""Setting up the native path of a communicator: scratch, CUDA IPC exchange, and a real
reachability probe. Collective over the MPI communicator; every rank reaches the same verdict.
"""
import secrets

from mpi4py import MPI

from . import ll128_probe, log, native_module, tuned_table
from .binding import ranks_bound_to_this_gpu


def agreed_reason(comm, why):
    """The first rank's reason for not using the native path, or None if no rank has one."""
    reasons = comm.allgather(why)
    for rank, reason in enumerate(reasons):
        if reason:
            return reason if rank == comm.Get_rank() else f"rank {rank}: {reason}"
    return None


def _native_module():
    try:
        return native_module.load(), None
    except native_module.NativeModuleMissing as exc:
        return None, str(exc)


def _diagnostics_missing(ll_mode):
    """Why HPCOLLS_LL_MODE=`ll_mode` cannot run here (hpcolls._native_diag not built), or None."""
    if ll_mode == 0:
        return None
    try:
        native_module.load_diagnostics()
        return None
    except native_module.NativeModuleMissing as exc:
        return f"HPCOLLS_LL_MODE={ll_mode} (a diagnostic LL variant) needs the diagnostic build, and {exc}"


def protocol_code(name):
    """HPCOLLS_PROTOCOL's value as the native layer numbers it: -1 auto, else its PROTOCOLS index."""
    return -1 if name == "auto" else ("ll", "sentinel", "ll128").index(name)


def _nccl_missing(cfg, ranks_on_device):
    """Why NCCL is not the alternative to the native path here (None: it is: a GPU per rank, NCCL
    importable, HPCOLLS_ALGO allowing it). The plan then takes a message whole only where the
    selection table says it beats NCCL; otherwise whole wherever it fits (the alternative being the
    same kernels in pieces)."""
    if cfg.algo not in ("auto", "nccl"):
        return f"HPCOLLS_ALGO={cfg.algo}"
    if ranks_on_device > 1:
        return "ranks share a GPU"
    try:
        from cupy.cuda import nccl  # noqa: F401
    except Exception as exc:  # noqa: BLE001 - any import failure means "no NCCL here"
        return f"cupy.cuda.nccl unavailable ({exc})"
    return None


def ranks_sharing_gpu(comm, uuid):
    """The most ranks any rank of `comm` shares its GPU (`uuid`: this rank's) with: those of `comm`
    on it, or more where select_device() bound more of the node's ranks to it (hpcolls/binding.py:
    the kernels of a row communicator's two ranks run beside those of every other rank on the GPU,
    and sized for two they could hold the SMs the others' waiting kernels need). The same on every
    rank, so that every rank sizes its grids alike; collective."""
    facts = comm.allgather((uuid, ranks_bound_to_this_gpu()))
    uuids = [u for u, _ in facts]
    return max(max(uuids.count(u), bound or 0) for u, bound in facts)


def open_native(comm, cfg, device, ranks_on_device=None):
    """(NativeComm, None) when every rank can store into every peer's scratch, else (None, why).
    `ranks_on_device`: how many ranks share this rank's GPU, which sizes the kernels' share of it;
    by default those of `comm` (the hierarchy passes its own count: emulated nodes share a GPU)."""
    native, why = _native_module()
    size = comm.Get_size()
    if why is None and size > native.MAX_RANKS:
        why = f"{size} ranks exceed the native path's {native.MAX_RANKS}"
    if why is None:
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        if node.Get_size() != size:
            why = "ranks span several nodes (CUDA IPC reaches one node only)"
        node.Free()
    if why is None and device is None:
        why = "no CUDA device on this rank"
    why = agreed_reason(comm, why)
    if why:
        return None, why
    # A diagnostic LL mode was asked for explicitly: running without it would measure something
    # else, so every rank raises (agreed, so none is left waiting) instead of turning the path off.
    missing = agreed_reason(comm, _diagnostics_missing(cfg.ll_mode))
    if missing:
        raise RuntimeError(f"hpcolls: {missing}")

    uuid = native.device_info(device)["uuid"]
    if ranks_on_device is None:
        ranks_on_device = ranks_sharing_gpu(comm, uuid)
    nc = handle = None
    try:
        nc = native.NativeComm(comm.Get_rank(), size, device, cfg.scratch_bytes, cfg.timeout_s, ranks_on_device,
                               cfg.sentinel_scratch_bytes, cfg.ll128_scratch_bytes)
        nc.set_ll_mode(cfg.ll_mode)
        nc.set_threads_per_block(cfg.threads_per_block)
        nc.set_dependent_launch(cfg.dependent_launch)
        handle = nc.export_handle()
    except Exception as exc:  # noqa: BLE001 - any failure here means "no native path", agreed below
        why = f"scratch allocation/export failed: {exc}"
    handles = comm.allgather(handle)
    if not agreed_reason(comm, why):
        try:
            nc.open_peers(handles)
        except Exception as exc:  # noqa: BLE001
            why = f"opening peers' CUDA IPC handles failed: {exc}"
    why = agreed_reason(comm, why)
    if not why:
        why = _probe(comm, nc, cfg)
    if why:
        if nc is not None:
            nc.release()
        return None, why
    nc.set_oneshot_max_bytes(cfg.oneshot_max_bytes)
    nc.set_twoshot_max_bytes(cfg.twoshot_max_bytes)
    nc.set_algo({"oneshot": 0, "twoshot": 1}.get(cfg.algo, -1))
    nc.set_protocol(protocol_code(cfg.protocol))
    ll128_probe.decide(comm, nc, cfg.ll128_probe_ms, _ll128_not_probed(nc, cfg))
    nc.set_nccl_alternative(agreed_reason(comm, _nccl_missing(cfg, ranks_on_device)) is None)
    # A tuned table for this machine and rank count, where `python -m hpcolls tune` stored one: the
    # same on every rank (rank 0 decides), as every rank must plan every call alike.
    table = tuned_table.agreed(comm, native, device, ranks_on_device, cfg.tune_file)
    nc.set_selection_rows(list(table.rows))
    regions = ", ".join(f"{name} {nc.region_bytes(p)} B" for p, name in enumerate(native.PROTOCOLS))
    log.info(f"native path on: {size} ranks, {ranks_on_device} on this GPU ({uuid}), "
             f"scratch regions {regions}, protocol {cfg.protocol}, LL128 {'on' if nc.ll128_available else 'off'}, "
             f"largest Allreduce taken whole "
             f"{nc.largest_message()} B, {nc.max_blocks} blocks max, "
             f"dependent launch {'on' if nc.dependent_launch else 'off'}"
             f"{'' if nc.dependent_launch == cfg.dependent_launch else ' (the GPU is older than compute capability 9.0)'}"
             f", selection table {table.describe()}")
    return nc, None


def _ll128_not_probed(nc, cfg):
    """Why this rank does not run LL128's torn-line probe (hpcolls/ll128_probe.py), or None."""
    if cfg.ll128_probe_ms == 0:
        return "HPCOLLS_LL128_PROBE_MS=0 (no probe)"
    if cfg.ll_mode != 0 or cfg.threads_per_block != 0:
        return "a diagnosis setting is on (HPCOLLS_LL_MODE, HPCOLLS_THREADS_PER_BLOCK): the LL kernels only"
    return nc.ll128_probe_error(cfg.ll128_probe_ms / 1e3, ll128_probe.WAIT_S,
                                nc.region_bytes(ll128_probe.LL128_PROTOCOL)) or None


def _probe(comm, nc, cfg):
    """Reachability checked for real: an int64 SUM of random nonces through the kernel itself."""
    nonce = secrets.randbits(40)
    expected = comm.allreduce(nonce)
    nc.set_timeout(min(cfg.timeout_s, 5.0))
    try:
        got = nc.probe(nonce)
        why = None if got == expected else f"probe sum {got} != {expected}: peer stores are not visible"
    except Exception as exc:  # noqa: BLE001
        why = f"probe failed: {exc}"
    nc.set_timeout(cfg.timeout_s)
    return agreed_reason(comm, why)
