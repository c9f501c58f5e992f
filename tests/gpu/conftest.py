"""GPU tests: run on the GPU machine by tests/gpu_harness.sh (N ranks on one GPU under MPS, or
one rank per GPU). Without cupy or a visible GPU every test here is skipped, saying why."""
import pytest

try:
    import cupy
    _why = None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            _why = "no CUDA GPU visible"
    except cupy.cuda.runtime.CUDARuntimeError as exc:
        _why = f"no CUDA GPU visible ({exc})"
except ImportError:
    cupy = None
    _why = "cupy not installed (pip install hpcolls[cu13])"


def pytest_collection_modifyitems(config, items):
    if _why is None:
        return
    marker = pytest.mark.skip(reason=_why)
    for item in items:
        if "/gpu/" in str(item.fspath):
            item.add_marker(marker)


@pytest.fixture(scope="session")
def gpu(request):
    """Binds this rank to its GPU (hpcolls.binding) and returns the device index."""
    from mpi4py import MPI
    from hpcolls.binding import select_device
    return select_device(MPI.COMM_WORLD)
