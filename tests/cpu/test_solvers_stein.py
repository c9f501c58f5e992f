"""Multisection and inverse iteration (solvers/stein.py, the host build of the kernels' steps in
native/solvers/stein*): eigenvalues against LAPACK's dstebz on the tridiagonals that stress
eigensolvers, eigenvectors by LAPACK's test ratios on the same, start vectors that do not depend
on how the vectors are batched, and a failed check handing the subset to divide and conquer."""
import numpy as np
import pytest
import scipy.linalg
from mpi4py import MPI

from solvers import stein
from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.stebz import lapack_bisect, stebz
from solvers.subset import EigenRange
from solvers.kernels import kernels
from solvers.sygvd import sygvd
from solvers.problems import random_symmetric
from solver_testing import (hard_tridiagonals, straddled_tridiagonal,
                            tridiagonal_ratios)

pytestmark = pytest.mark.skipif(kernels()[0] is None, reason=f"{kernels()[1]}")

THRESHOLD = 30   # LAPACK's test threshold on its ratios


@pytest.fixture
def coll():
    grid = ProcessGrid(MPI.COMM_SELF)
    yield Collectives(grid, "mpi", np)
    grid.free()


def _cases(rng):
    return hard_tridiagonals(rng, 120) + [("straddled", *straddled_tridiagonal(rng, 20))]


def _selections(n):
    """1-based (il, iu): the lowest tenth, one in the middle, the top one, all."""
    return [(1, max(1, n // 10)), (n // 2, n // 2), (n, n), (1, n)]


def test_multisection_finds_what_lapacks_bisection_finds(rng):
    """The kernels' host build: each eigenvalue within four of its bisection intervals' widths
    (one ulp of ‖T‖) of dstebz's."""
    bisect = stein.multisection(np)
    for name, d, e in _cases(rng):
        n = d.shape[0]
        _, (lower, upper, _, abstol) = stein.bisection_inputs(d, e)
        for il, iu in _selections(n):
            w, ref = bisect(d, e, il, iu), lapack_bisect(d, e, il, iu)
            assert w.shape == (iu - il + 1,) and np.all(np.diff(w) >= 0), name
            assert np.all((lower <= w) & (w <= upper)), name
            worst = np.abs(w - ref).max() / abstol
            assert worst <= 4, f"{name} {il}..{iu}: {worst:.1f} ulps of |T| from dstebz"


def test_eigenvalues_of_an_order_one_and_two():
    bisect = stein.multisection(np)
    assert bisect(np.array([-2.5]), np.zeros(0), 1, 1)[0] == -2.5
    w = bisect(np.array([1.0, 1.0]), np.array([1.0]), 1, 2)
    np.testing.assert_allclose(w, [0.0, 2.0], atol=4e-16)


def test_inverse_iteration_passes_lapacks_tests_on_hard_spectra(rng, coll):
    """Random, identity (one eigenvalue n times), clustered, graded, Wilkinson (pairs 10⁻¹⁴
    apart), exact and weakly coupled copies, huge scale, the straddled clusters: every selection's
    vectors pass dstt21's ratios, and where the check refuses them it says why (divide and conquer
    then runs; it must not refuse a random spectrum)."""
    refused = []
    for name, d, e in _cases(rng):
        for il, iu in _selections(d.shape[0]):
            w = stebz(d, e, il, iu, coll, stein.bisector(np))
            columns, why = stein.vectors(d, e, il, w, coll)
            if columns is None:
                refused.append(f"{name} {il}..{iu}: {why}")
                continue
            z = columns.mine
            assert z.shape == (d.shape[0], iu - il + 1) and columns.bounds.tolist() == [0, iu - il + 1]
            notes = coll.stats["other"].notes
            assert all(notes[f"stein_{phase}_s"] >= 0 for phase in ("iteration", "cholqr", "check")), notes
            ortho, resid = tridiagonal_ratios(d, e, w, z)
            assert resid < THRESHOLD and ortho < THRESHOLD, f"{name} {il}..{iu}: {resid:.1f}, {ortho:.1f}"
            assert np.all(z[np.abs(z).argmax(axis=0), np.arange(z.shape[1])] > 0), name  # dstein's sign
    assert not [r for r in refused if r.startswith("random")], refused


def test_tight_clusters_take_dsteins_reorthogonalization(coll, monkeypatch):
    """Straddled tridiagonals whose bisection puts three eigenvalues on one value while they lie
    ulps apart (these two seeds): iterated alone, the three vectors drift to one eigenvector and
    the check refuses them; as a tight cluster, through dstein, they pass dstt21's ratios."""
    cases = []
    for seed in (136, 366):
        d, e = straddled_tridiagonal(np.random.default_rng(seed), 20)
        w = stebz(d, e, 1, 80, coll, stein.bisector(np))
        assert any(b - a >= 3 for a, b in stein.tight_clusters(w, stein.norm1(d, e))), seed
        cases.append((d, e, w))

    def worst_ratio(d, e, w):
        columns, _ = stein.vectors(d, e, 1, w, coll)
        return np.inf if columns is None else max(tridiagonal_ratios(d, e, w, columns.mine))
    assert max(worst_ratio(*case) for case in cases) < 2 * stein.REDO
    assert coll.stats["other"].notes["tight_clusters_by_dstein"] >= 1
    monkeypatch.setattr(stein, "TIGHT", -1.0)   # not even equal eigenvalues are a tight cluster
    assert min(worst_ratio(*case) for case in cases) >= THRESHOLD


def test_exactly_repeated_eigenvalues_need_no_dstein(rng):
    """T = diag(B, B): every eigenvalue twice, every pair a tight cluster. Independent iteration
    already gives good vectors there (random starts span each pair), so the clusters do not go to
    the host's dstein (a call per cluster, O(n) each: seconds at n = 16384 with a spectrum of
    pairs), all but the rare pair whose two start vectors lie nearly parallel in its plane (about
    one run in 50 has one among its 30)."""
    grid = ProcessGrid(MPI.COMM_SELF)
    try:
        coll = Collectives(grid, "mpi", np)
        q = 150
        bd, be = rng.standard_normal(q), rng.standard_normal(q - 1)
        d, e = np.concatenate((bd, bd)), np.concatenate((be, [0.0], be))
        w = stebz(d, e, 1, 60, coll, stein.bisector(np))
        assert len(stein.tight_clusters(w, stein.norm1(d, e))) == 30
        columns, why = stein.vectors(d, e, 1, w, coll)
        assert why is None, why
        assert max(tridiagonal_ratios(d, e, w, columns.mine)) < stein.REDO
        assert coll.stats["other"].notes["tight_clusters_by_dstein"] <= 3
    finally:
        grid.free()


def test_vectors_match_lapacks_where_the_spectrum_is_separated(rng, coll):
    """A random tridiagonal (gaps far above ε ‖T‖): the vectors are dstein's to rounding, up to
    LAPACK's sign rule (the largest entry positive), which they share."""
    n = 90
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    w = stebz(d, e, 5, 30, coll, stein.bisector(np))
    z = stein.vectors(d, e, 5, w, coll)[0].mine
    _, ref = scipy.linalg.eigh_tridiagonal(d, e, select="i", select_range=(4, 29))
    ref = ref * np.sign(ref[np.abs(ref).argmax(axis=0), np.arange(ref.shape[1])])
    gaps = np.minimum(np.diff(w, prepend=-np.inf), np.diff(w, append=np.inf))
    bound = 1e3 * np.finfo(np.float64).eps * np.abs(d).max() / gaps
    assert np.all(np.abs(z - ref).max(axis=0) <= bound)


def test_the_start_vectors_do_not_depend_on_the_batches(rng, coll, monkeypatch):
    """Vectors computed three at a time are those computed all at once, bit for bit (each start
    vector is numbered by its eigenvalue's place in T's spectrum)."""
    n = 70
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    w = stebz(d, e, 3, 22, coll, stein.bisector(np))
    whole = stein.vectors(d, e, 3, w, coll)[0].mine
    monkeypatch.setattr(stein, "BATCH_BYTES", stein.WORK_BYTES * n * 3)
    batched = stein.vectors(d, e, 3, w, coll)[0].mine
    assert batched.tobytes() == whole.tobytes()


def test_a_failed_check_hands_the_subset_to_divide_and_conquer(rng, monkeypatch):
    """With the checks' bound at zero no vector passes: the stage says why, divide and conquer
    solves the subset instead, and the answer is still scipy's."""
    monkeypatch.setattr(stein, "THRESHOLD", 0.0)
    n, nb = 30, 4
    a = random_symmetric(rng, n)
    grid = ProcessGrid(MPI.COMM_SELF)
    try:
        coll = Collectives(grid, "mpi", np)
        w, z = sygvd(DistMatrix.from_global(a, grid, nb), None, coll, method="distributed",
                     subset=EigenRange.by_index(3, 9, "invit"))
        notes = coll.stats["stein"].notes
        assert notes["solver"].startswith("dc [invit's check failed: the vectors failed their check"), notes
        assert "stedc" in coll.stats
        ref_w, ref_z = scipy.linalg.eigh(a, subset_by_index=[2, 8])
        np.testing.assert_allclose(w, ref_w, atol=1e-12)
        z = z.to_global(coll)
        np.testing.assert_allclose(np.abs(z.T @ ref_z), np.eye(7), atol=1e-10)
    finally:
        grid.free()


def test_the_bench_counts_inverse_iteration_as_the_tridiagonal_solve():
    """solvers.bench's subset saving: stebz and stein are the tridiagonal solve, what follows
    them the back-transformations (a subset row beside the all-eigenpairs row)."""
    from solvers.bench import sygvd as bench
    lines = []
    full = {"range": "A", "method": "distributed", "reduction": "1stage", "ours_median_s": 4.0,
            "ours_stages_s": {"sytrd": 3.0, "stedc": 0.3, "ormtr": 0.2, "trsm": 0.2}}
    part = {"range": "I:1:10", "eigenpairs": 10, "method": "distributed", "reduction": "1stage",
            "ours_median_s": 3.2, "ours_stages_s": {"sytrd": 3.0, "stebz": 0.02, "stein": 0.04,
                                                     "ormtr": 0.05, "trsm": 0.05}}
    bench._report_savings(lines.append, [full, part])
    assert "tridiagonal 0.060 s against 0.300 s (80.0% saved)" in lines[0], lines
    assert "back-transformations 0.100 s against 0.400 s (75.0% saved)" in lines[0], lines
    assert part["saving_after_reduction"] == pytest.approx(1 - 0.16 / 0.7)
