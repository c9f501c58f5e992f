"""GPU tests: run on the GPU machine by tests/gpu_harness.sh (N ranks on one GPU under MPS, or
one rank per GPU). Without cupy or a visible GPU every test here is skipped, saying why."""
import faulthandler
import os

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


_stacks = None  # the deadline's stack file, kept open for faulthandler


def pytest_configure(config):
    """HPCOLLS_TEST_DEADLINE=S (tests/gpu_harness.sh sets it a little inside each step's limit):
    after S seconds this rank writes every thread's stack to stacks_rank<R>.txt in $STEP_LOGS (the
    harness's step logs; else the working directory) and exits. A failing check aborts the job at
    once (tests/conftest.py), but a rank stuck in a wait that nothing bounds is killed silently by
    the step's time limit; with the deadline every stuck rank first says where. Not to stderr:
    pytest's capture holds it, and a process that exits there loses it."""
    global _stacks
    seconds = float(os.environ.get("HPCOLLS_TEST_DEADLINE") or 0)
    if seconds > 0:
        rank = os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK") or f"pid{os.getpid()}"
        _stacks = open(os.path.join(os.environ.get("STEP_LOGS") or ".", f"stacks_rank{rank}.txt"), "w")
        faulthandler.dump_traceback_later(seconds, exit=True, file=_stacks)


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


@pytest.fixture
def seed():
    """A seed fresh each run and the same on every rank (the solver tests' random matrices)."""
    from mpi4py import MPI
    from solver_testing import shared_seed
    return shared_seed(MPI.COMM_WORLD)


def _grid_shapes():
    from mpi4py import MPI
    from solver_testing import grid_shapes
    return grid_shapes(MPI.COMM_WORLD.Get_size())


@pytest.fixture(params=_grid_shapes(), ids=lambda s: f"{s[0]}x{s[1]}")
def grid(request):
    """Every process grid the world's ranks make (1xP, ..., Px1), freed after the test."""
    from mpi4py import MPI
    from solvers.distributed import ProcessGrid
    g = ProcessGrid(MPI.COMM_WORLD, request.param)
    yield g
    g.free()
