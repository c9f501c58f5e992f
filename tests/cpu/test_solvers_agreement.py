"""The ranks' agreement's pieces that need no second rank: the fingerprint reads exactly the
entries the solver reads, the messages name ranks compactly, one rank passes errors through
unchanged (tests/mpi/test_solvers_rank_agreement.py runs the agreement across ranks)."""
import numpy as np
import pytest
from mpi4py import MPI

from solvers import RankMismatchError
from solvers.agreement import Agreement, _mismatch, _ranks, fingerprint
from solvers.problems import random_symmetric


@pytest.fixture
def rng():
    return np.random.default_rng()


@pytest.mark.parametrize("n", [1, 3, 64, 300])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
def test_fingerprint_reads_only_the_referenced_triangle(rng, n, lower, dtype):
    a = random_symmetric(rng, n, np.dtype(dtype).kind == "c").astype(dtype)
    mark = fingerprint(np, a, lower)
    other = np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)
    junk = a + 1e3 * other.astype(dtype)                      # the triangle never read
    if np.dtype(dtype).kind == "c":
        junk[np.diag_indices(n)] += 5j                         # diagonal imaginary parts: ignored
    assert fingerprint(np, junk, lower) == mark
    assert fingerprint(np, np.asfortranarray(a), lower) == mark
    changed = a.copy()
    changed[np.diag_indices(n)] += 1
    assert fingerprint(np, changed, lower) != mark


def test_fingerprint_sees_every_entry_of_a_small_triangle(rng):
    """Up to SAMPLE entries the sample may miss some, so a triangle of at most ~SAMPLE / 2
    entries is checked one changed entry at a time for the rows the sample reaches."""
    n = 40
    a = random_symmetric(rng, n)
    mark = fingerprint(np, a, True)
    seen = 0
    for i in range(n):
        for j in range(i + 1):
            changed = a.copy()
            changed[i, j] += 1.0
            seen += fingerprint(np, changed, True) != mark
    assert seen >= 0.6 * n * (n + 1) // 2, seen


def test_rank_lists():
    assert _ranks([3]) == "rank 3"
    assert _ranks([0, 2, 3, 4, 7]) == "ranks 0, 2-4, 7"
    assert _ranks([0, 1]) == "ranks 0-1"


def test_mismatch_message_names_each_difference_and_its_ranks():
    given = [{"entry": "e", "n": 40, "dtype": "float64"}, {"entry": "e", "n": 45, "dtype": "float64"},
             {"entry": "e", "n": 40, "dtype": "float64"}, {"entry": "e", "n": 40}]
    error = _mismatch("solvers.eigh", given)
    assert isinstance(error, RankMismatchError) and isinstance(error, ValueError)
    assert "n: 40 on ranks 0, 2-3, 45 on rank 1" in str(error)
    assert "dtype" not in str(error)        # rank 3 did not get that far: not a difference
    assert _mismatch("solvers.eigh", given[:1] * 3) is None


def test_one_rank_passes_its_errors_through_unchanged():
    comm = MPI.COMM_SELF
    original = ValueError("bad subset")
    with pytest.raises(ValueError) as err:
        with Agreement(comm, "solvers.eigh") as call:
            call.record(n=np.int64(4), subset=[np.int32(0), 2])
            assert call.given["n"] == 4 and call.given["subset"] == (0, 2)
            raise original
    assert err.value is original
