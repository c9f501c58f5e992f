"""The guard at the top of the GPU test modules that import cupy at module level."""
import pytest


def cupy_with_a_gpu():
    """cupy, when it imports and sees at least one GPU; else the calling module is skipped."""
    cupy = pytest.importorskip("cupy", reason="cupy not installed (pip install hpcolls[cu13])")
    try:
        devices = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no driver / no device both mean: nothing to run on
        devices = 0
    if devices < 1:
        pytest.skip("no CUDA GPU visible", allow_module_level=True)
    return cupy


def collective_kinds():
    """The solver's collective kinds this install can run: mpi, and hpcolls when it imports."""
    kinds = ["mpi"]
    try:
        import hpcolls  # noqa: F401
        kinds.append("hpcolls")
    except ImportError:
        pass
    return kinds
