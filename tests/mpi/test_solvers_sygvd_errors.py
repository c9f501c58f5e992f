"""Bad input under MPI: every rank raises the same error (never a hang, never a wrong answer)."""
import numpy as np
import pytest
from mpi4py import MPI

import solvers
from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.errors import InputError, NotPositiveDefiniteError
from solvers.sygvd import sygvd
from solvers.problems import random_symmetric, spd_with_condition
from solver_testing import grid_shapes, not_positive_definite, share_node_cores

share_node_cores(MPI.COMM_WORLD)
SHAPES = grid_shapes(MPI.COMM_WORLD.Get_size())




def raised_everywhere(comm, exc_type, call):
    """Run call(), expect exc_type on this rank; return every rank's exception (allgathered)."""
    with pytest.raises(exc_type) as err:
        call()
    return err.value, comm.allgather((type(err.value).__name__, str(err.value)))


@pytest.mark.parametrize("method", ["distributed", "single"])
@pytest.mark.parametrize("minor", [1, 9, 26])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_not_positive_definite_same_info_on_every_rank(grid, comm, seed, minor, uplo, method):
    rng = np.random.default_rng(seed)
    n = 26
    hermitian = minor == 9   # one complex case: zpotrf's info, through either method
    a, b = random_symmetric(rng, n, hermitian), not_positive_definite(rng, n, minor, hermitian)
    coll = Collectives(grid)
    da, db = DistMatrix.from_global(a, grid, 4), DistMatrix.from_global(b, grid, 4)
    err, everyone = raised_everywhere(comm, NotPositiveDefiniteError,
                                      lambda: sygvd(da, db, coll, uplo=uplo, method=method))
    assert err.info == minor, f"seed={seed}"
    assert f"leading minor of order {minor} " in str(err)
    assert len(set(everyone)) == 1, everyone
    assert isinstance(err, np.linalg.LinAlgError)


@pytest.mark.parametrize("which", ["A", "B"])
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_in_referenced_triangle_on_one_rank(grid, comm, seed, which, value):
    """The bad entry lives on one rank only; every rank must still raise."""
    rng = np.random.default_rng(seed)
    n = 21
    mats = {"A": random_symmetric(rng, n), "B": spd_with_condition(rng, n, 10.0)}
    i, j = int(rng.integers(1, n)), 0
    mats[which][i, j] = value                       # in the lower triangle: referenced by uplo=L
    coll = Collectives(grid)
    da, db = (DistMatrix.from_global(mats[k], grid, 3) for k in "AB")
    _, everyone = raised_everywhere(comm, InputError, lambda: sygvd(da, db, coll))
    assert len(set(everyone)) == 1 and f"{which} has NaN or Inf" in everyone[0][1], everyone


def test_mismatched_and_invalid_arguments(grid, comm, seed):
    rng = np.random.default_rng(seed)
    coll = Collectives(grid)
    a = DistMatrix.from_global(random_symmetric(rng, 12), grid, 4)
    cases = [
        (lambda: sygvd(a, DistMatrix.from_global(np.eye(11), grid, 4), coll), "B is 11x11"),
        (lambda: sygvd(a, DistMatrix.from_global(np.eye(12), grid, 3), coll), "layout"),
        (lambda: sygvd(a, DistMatrix.from_global(np.eye(12, dtype=np.float32), grid, 4), coll), "float32"),
        (lambda: sygvd(DistMatrix.from_global(np.ones((12, 10)), grid, 4), None, coll), "square"),
        (lambda: sygvd(a, None, coll, itype=0), "itype"),
        (lambda: sygvd(a, None, coll, jobz="X"), "jobz"),
        (lambda: sygvd(a, None, coll, uplo="Q"), "uplo"),
        (lambda: sygvd(a, None, coll, method="fast"), "method"),
        (lambda: sygvd(a, None, coll, method="replicated"), "needs the whole problem on every rank"),
        (lambda: sygvd(DistMatrix.from_global(np.eye(12, dtype=np.int64), grid, 4), None, coll),
         "the solver takes float32, float64, complex64, complex128"),
    ]
    for call, needle in cases:
        _, everyone = raised_everywhere(comm, InputError, call)
        assert len(set(everyone)) == 1 and needle in everyone[0][1], everyone


def test_bad_grid_every_rank(comm):
    size = comm.Get_size()
    for shape in [(size + 1, 1), (1, 2 * size), (size, size + 1)]:
        _, everyone = raised_everywhere(comm, ValueError, lambda: ProcessGrid(comm, shape))
        assert len(set(everyone)) == 1 and "MPI ranks" in everyone[0][1]
    with pytest.raises(ValueError, match="grid"):
        solvers.eigh(np.eye(3), grid=(size + 1, 1), comm=comm)


def test_solver_still_works_after_errors(grid, seed):
    """A raised error leaves no collective half-done: the next solve on the same grid works."""
    rng = np.random.default_rng(seed)
    coll = Collectives(grid)
    a, b = random_symmetric(rng, 15), not_positive_definite(rng, 15, 7)
    for method in ("distributed", "single"):
        with pytest.raises(NotPositiveDefiniteError):
            sygvd(DistMatrix.from_global(a, grid, 4), DistMatrix.from_global(b, grid, 4), coll, method=method)
        w, _ = sygvd(DistMatrix.from_global(a, grid, 4), DistMatrix.from_global(np.eye(15) * 2, grid, 4), coll,
                     method=method)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(a) / 2, atol=1e-13, err_msg=f"seed={seed}")
