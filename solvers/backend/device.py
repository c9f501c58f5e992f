"""Which device a run uses and which GPU each rank binds to.

Both questions are delegated to hpcolls when it is importable (it knows launchers, MPS and
device counts). On a machine without hpcolls built, that is treated as "no GPU" rather than an
error, so the CPU path always works.
"""
import os

from .arrays import get_cupy, module_for_device


def gpu_available():
    """(available, reason) — True only when hpcolls imports and reports a usable GPU."""
    try:
        import hpcolls
    except ImportError as exc:
        return False, f"hpcolls not importable ({exc})"
    probe = getattr(hpcolls, "gpu_available", None)
    if probe is None:
        return False, "hpcolls has no gpu_available()"
    try:
        ok = bool(probe())
    except Exception as exc:  # a broken driver must not stop a CPU run
        return False, f"hpcolls.gpu_available() failed ({exc})"
    return ok, "hpcolls.gpu_available() is True" if ok else "hpcolls.gpu_available() is False"


def resolve_device(requested):
    """'auto' | 'cpu' | 'gpu' → ('cpu' | 'gpu', reason)."""
    if requested == "cpu":
        return "cpu", "requested"
    if requested == "gpu":
        return "gpu", "requested"
    if requested != "auto":
        raise ValueError(f"device must be auto, cpu or gpu, got {requested!r}")
    ok, why = gpu_available()
    return ("gpu" if ok else "cpu"), f"auto: {why}"


def select_device(comm):
    """Bind this rank to a GPU; returns the device id.

    hpcolls.select_device refuses silent oversubscription without MPS; without hpcolls the
    classic local_rank % ndev rule is used.
    """
    try:
        from hpcolls import select_device as hpcolls_select_device
    except ImportError:
        hpcolls_select_device = None
    if hpcolls_select_device is not None:
        dev = hpcolls_select_device(comm)
        return int(getattr(dev, "id", dev))
    cupy = get_cupy()
    local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK",
                                    os.environ.get("SLURM_LOCALID", comm.Get_rank())))
    ndev = cupy.cuda.runtime.getDeviceCount()
    if ndev < 1:
        raise RuntimeError("no CUDA GPU visible")
    cupy.cuda.Device(local_rank % ndev).use()
    return local_rank % ndev


def rank_backend(comm, requested):
    """(device, array module) of a run on ``comm`` asked for ``requested`` ('auto', 'cpu',
    'gpu'), with this rank's GPU selected on a GPU run (the benchmarks' set-up)."""
    device, _ = resolve_device(requested)
    xp = module_for_device(device)
    if device == "gpu":
        select_device(comm)
    return device, xp
