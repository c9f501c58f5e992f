"""Ranks given different problems: every rank raises the same error, naming what differs and on
which ranks, before any other message (never a hang: tests/run.sh bounds each MPI run by a
time-out; never a result from mismatched inputs). The last rank is the odd one out."""
import numpy as np
import pytest
from mpi4py import MPI

import solvers
from solvers import RankMismatchError
from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.problems import random_symmetric, spd_with_condition
from solvers.subset import EigenRange
from solvers.sygvd import sygvd
from solver_testing import shared_seed

COMM = MPI.COMM_WORLD
SIZE = COMM.Get_size()
pytestmark = pytest.mark.skipif(SIZE < 2, reason="a mismatch between ranks needs 2 or more ranks")
ODD = COMM.Get_rank() == SIZE - 1


def raised_everywhere(kind, call):
    """call() raises ``kind`` on this rank; every rank's (class, message), allgathered."""
    with pytest.raises(kind) as err:
        call()
    return COMM.allgather((type(err.value).__name__, str(err.value)))


def same_mismatch_everywhere(call, names):
    everyone = raised_everywhere(RankMismatchError, call)
    assert len(set(everyone)) == 1, everyone
    message = everyone[0][1]
    for name in names:
        assert f"{name}: " in message, message
    assert f"on rank {SIZE - 1}" in message, message
    return message


def pencil(seed, n, dtype=np.float64):
    rng = np.random.default_rng(seed)
    hermitian = np.dtype(dtype).kind == "c"
    return (random_symmetric(rng, n, hermitian).astype(dtype),
            spd_with_condition(rng, n, 10.0, hermitian).astype(dtype))


def other_grid():
    """A grid shape valid at this size, and another one for the odd rank."""
    return (SIZE, 1) if ODD else (1, SIZE)


# name: (what differs in the message, this rank's eigh arguments given the shared seed)
EIGH_CASES = {
    "n": (["shape"], lambda s: (pencil(s, 45 if ODD else 40), {})),
    "dtype": (["dtype"], lambda s: (pencil(s, 40, np.float32 if ODD else np.float64), {})),
    "itype": (["type"], lambda s: (pencil(s, 40), {"type": 2 if ODD else 1})),
    "uplo": (["lower"], lambda s: (pencil(s, 40), {"lower": not ODD})),
    "jobz": (["eigvals_only"], lambda s: (pencil(s, 40), {"eigvals_only": ODD})),
    "subset": (["subset_by_index"], lambda s: (pencil(s, 40), {"subset_by_index": [0, 5 if ODD else 4]})),
    "driver": (["driver"], lambda s: (pencil(s, 40), {"driver": "gvx" if ODD else "gvd"})),
    "nb": (["nb"], lambda s: (pencil(s, 40), {"nb": 16 if ODD else 8})),
    "grid": (["grid"], lambda s: (pencil(s, 40), {"grid": other_grid()})),
    "data": (["entries of a"], lambda s: ((pencil(s + ODD, 40)[0], pencil(s, 40)[1]), {})),
    "data_b": (["entries of b"], lambda s: ((pencil(s, 40)[0], pencil(s + ODD, 40)[1]), {})),
}


@pytest.mark.parametrize("method", ["distributed", "auto"])
@pytest.mark.parametrize("case", sorted(EIGH_CASES))
def test_eigh_mismatch_raises_the_same_error_everywhere(case, method):
    names, make = EIGH_CASES[case]
    (a, b), kwargs = make(shared_seed(COMM))
    kwargs.setdefault("method", method)
    same_mismatch_everywhere(lambda: solvers.eigh(a, b, comm=COMM, **kwargs), names)


def test_eigh_same_problem_is_solved():
    """The agreement lets identical calls through (and with check_ranks=False, unchecked data)."""
    a, b = pencil(shared_seed(COMM), 40)
    for check in (True, False):
        w = solvers.eigh(a, b, comm=COMM, method="distributed", eigvals_only=True, check_ranks=check)
        everyone = COMM.allgather(w.tobytes())
        assert len(set(everyone)) == 1


def test_eigh_check_ranks_off_still_compares_the_arguments():
    a, b = pencil(shared_seed(COMM), 45 if ODD else 40)
    same_mismatch_everywhere(lambda: solvers.eigh(a, b, comm=COMM, check_ranks=False), ["shape"])


def test_only_the_other_triangle_differs_is_no_mismatch():
    """Entries the solver never reads may differ (LAPACK's rule): the fingerprint skips them."""
    a, b = pencil(shared_seed(COMM), 40)
    if ODD:
        a = a + np.triu(np.full_like(a, 7.0), 1)
    w = solvers.eigh(a, b, comm=COMM, method="distributed", eigvals_only=True)
    assert len(set(COMM.allgather(w.tobytes()))) == 1


def test_one_rank_failing_its_checks_fails_every_rank():
    """An error only one rank's input raises (a non-square a there) is raised on every rank,
    naming the rank."""
    a, b = pencil(shared_seed(COMM), 40)
    if ODD:
        a = a[:, :39]
    everyone = raised_everywhere(ValueError, lambda: solvers.eigh(a, b, comm=COMM))
    assert len(set(everyone)) == 1, everyone
    assert "expected square 'a' matrix" in everyone[0][1], everyone
    assert f"(on rank {SIZE - 1} of {SIZE})" in everyone[0][1], everyone


def test_every_rank_failing_alike_raises_the_error_itself():
    a, b = pencil(shared_seed(COMM), 40)
    everyone = raised_everywhere(ValueError, lambda: solvers.eigh(a, b, comm=COMM, subset_by_index=[0, 50]))
    assert len(set(everyone)) == 1 and "(on rank" not in everyone[0][1], everyone
    assert "Requested eigenvalue indices are not valid" in everyone[0][1]


@pytest.mark.parametrize("case", ["n", "dtype", "uplo", "nb", "grid", "data"])
def test_cholesky_mismatch(case):
    seed = shared_seed(COMM)
    b = pencil(seed, 45 if case == "n" and ODD else 40,
               np.float32 if case == "dtype" and ODD else np.float64)[1]
    kwargs = {"uplo": {"lower": not ODD}, "nb": {"nb": 16 if ODD else 8},
              "grid": {"grid": other_grid()}}.get(case, {})
    if case == "data" and ODD:
        b = pencil(seed + 1, 40)[1]
    names = {"n": ["shape"], "dtype": ["dtype"], "uplo": ["lower"], "nb": ["nb"], "grid": ["grid"],
             "data": ["entries of b"]}[case]
    same_mismatch_everywhere(lambda: solvers.cholesky(b, comm=COMM, **kwargs), names)


@pytest.fixture
def grid():
    g = ProcessGrid(COMM, (1, SIZE))
    yield g
    g.free()


@pytest.mark.parametrize("case", ["n", "dtype", "itype", "uplo", "jobz", "subset", "nb", "method",
                                  "standard"])
def test_sygvd_mismatch(grid, case):
    """The DistMatrix routine: each rank holds its own blocks, so the ranks compare layouts and
    arguments (not entries)."""
    seed = shared_seed(COMM)
    a, b = pencil(seed, 45 if case == "n" and ODD else 40,
                  np.float32 if case == "dtype" and ODD else np.float64)
    nb = 16 if case == "nb" and ODD else 8
    da, db = DistMatrix.from_global(a, grid, nb), DistMatrix.from_global(b, grid, nb)
    if case == "standard" and ODD:
        db = None
    kwargs = {"itype": {"itype": 2 if ODD else 1}, "uplo": {"uplo": "U" if ODD else "L"},
              "jobz": {"jobz": "N" if ODD else "V"},
              "subset": {"subset": EigenRange.by_index(1, 6 if ODD else 5)},
              "method": {"method": "single" if ODD else "distributed"}}.get(case, {})
    names = {"n": ["a"], "dtype": ["a"], "nb": ["a"], "standard": ["b"]}.get(case, [case])
    same_mismatch_everywhere(lambda: sygvd(da, db, Collectives(grid), **kwargs), names)


def test_sygvd_solves_after_a_mismatch(grid):
    """A refused call leaves no message behind: the next, agreed, call solves."""
    a, b = pencil(shared_seed(COMM), 40)
    da, db = DistMatrix.from_global(a, grid, 8), DistMatrix.from_global(b, grid, 8)
    coll = Collectives(grid)
    with pytest.raises(RankMismatchError):
        sygvd(da, db, coll, itype=2 if ODD else 1)
    w, _ = sygvd(da, db, coll, jobz="N")
    assert len(set(COMM.allgather(np.asarray(w).tobytes()))) == 1
