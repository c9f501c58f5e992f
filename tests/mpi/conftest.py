"""Fixtures shared by the MPI suites (the MPI-aware hooks are in tests/conftest.py)."""
import pytest
from mpi4py import MPI

from solvers.distributed import ProcessGrid
from solver_testing import grid_shapes, shared_seed


@pytest.fixture
def seed(comm):
    """A random seed, fresh each run, the same on every rank (printed by failing asserts)."""
    return shared_seed(comm)


@pytest.fixture(params=grid_shapes(MPI.COMM_WORLD.Get_size()), ids=lambda s: f"{s[0]}x{s[1]}")
def grid(request, comm):
    """Every process-grid shape this rank count allows (1xP, Px1 and square ones)."""
    g = ProcessGrid(comm, request.param)
    yield g
    g.free()
