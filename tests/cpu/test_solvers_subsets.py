"""The pieces of eigenpair subsets that need no MPI: LAPACK's RANGE (parsing, LAPACK's validity
rules), Sturm counts against computed spectra, the selection kept from a full result, the cut
rule of the eigenvector groups (never inside one of the root's clusters), dstemr's n × k call
against scipy's eigh_tridiagonal, and slices of one MRRR root (what each rank computes)."""
import math

import numpy as np
import pytest
import scipy.linalg

from solvers.backend.lapack import MrrrRoot, stein_vectors, stemr_vectors
from solvers.errors import InputError
from solvers.stemr import group_bounds, root_cuts
from solvers.subset import EigenRange, count_at_most, positions
from solvers.problems import random_symmetric, spd_with_condition
from solver_testing import tridiagonal_ratios
from solvers.plan import choose_subset_solver


def test_parse_the_command_line_forms():
    assert EigenRange.parse("I:1:10") == EigenRange.by_index(1, 10)
    assert EigenRange.parse("v:-1.5:inf") == EigenRange.by_value(-1.5, math.inf)
    assert EigenRange.parse("A").is_all
    for bad in ("I:1", "I:a:b", "X:1:2", "V:1:2:3", ""):
        with pytest.raises(ValueError, match="range must be"):
            EigenRange.parse(bad)


@pytest.mark.parametrize("subset", [EigenRange.by_index(0, 3), EigenRange.by_index(4, 3),
                                    EigenRange.by_index(1, 11), EigenRange.by_value(2.0, 2.0),
                                    EigenRange.by_value(3.0, 1.0), EigenRange.by_value(math.nan, 1.0)])
def test_invalid_ranges_are_refused_as_lapack_does(subset):
    with pytest.raises(InputError, match="not valid"):
        subset.check(10)


def test_valid_ranges_pass():
    for subset in (EigenRange.by_index(1, 10), EigenRange.by_index(4, 4), EigenRange.all(),
                   EigenRange.by_value(-math.inf, math.inf)):
        subset.check(10)


def test_sturm_counts_match_the_spectrum(rng):
    n = 57
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    w = scipy.linalg.eigvalsh_tridiagonal(d, e)
    mids = (w[1:] + w[:-1]) / 2
    for i, x in enumerate(mids):
        assert count_at_most(d, e, x) == i + 1
    assert count_at_most(d, e, -math.inf) == 0 and count_at_most(d, e, math.inf) == n
    assert count_at_most(d, e, w[0] - 1) == 0 and count_at_most(d, e, w[-1] + 1) == n
    lo, hi = sorted(rng.choice(n - 1, 2, replace=False))
    assert EigenRange.by_value(mids[lo], mids[hi]).indices(d, e) == (lo + 2, hi + 1)


def test_positions_keep_what_scipy_keeps(rng):
    w = np.sort(rng.standard_normal(20))
    assert positions(w, EigenRange.by_index(3, 7)) == slice(2, 7)
    assert w[positions(w, EigenRange.by_value(w[4], w[9]))].tolist() == w[5:10].tolist()   # (vl, vu]
    assert w[positions(w, EigenRange.by_value(w[4] + 1e-9, w[4] + 2e-9))].size == 0
    assert positions(w, None) == slice(0, 20)


def _gap_cuts(w, min_gap):
    return np.flatnonzero(np.diff(w) >= min_gap) + 1


def test_groups_are_even_where_cuts_allow_and_never_split_a_cluster(rng):
    w = np.linspace(-1, 1, 40)
    assert group_bounds(_gap_cuts(w, 1e-3), 40, 4).tolist() == [0, 10, 20, 30, 40]
    cluster = np.sort(np.concatenate([np.linspace(-1, 0, 20), 0.5 + 1e-13 * np.arange(12),
                                      np.linspace(0.6, 1, 8)]))
    bounds = group_bounds(_gap_cuts(cluster, 1e-3), 40, 4)
    assert bounds[0] == 0 and bounds[-1] == 40 and np.all(np.diff(bounds) >= 0)
    inside = set(range(21, 32))   # a cut at c splits the cluster w[20:32] when 20 < c < 32
    assert not inside & set(bounds.tolist()), bounds
    assert group_bounds(_gap_cuts(np.zeros(7), 1e-3), 7, 3).tolist() == [0, 7, 7, 7]
    assert group_bounds([], 0, 3).tolist() == [0, 0, 0, 0]
    assert group_bounds(_gap_cuts(w, 1e-3), 40, 1).tolist() == [0, 40]


def _pencil_tridiagonal(rng, n, split=False):
    """The tridiagonal of L⁻¹ A L⁻ᵀ for a random A and a B = L Lᵀ of condition 100 (the
    spectra the solver's generalized problems hand to MRRR), optionally split in blocks."""
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 100.0)
    low = np.linalg.cholesky(b)
    c = scipy.linalg.solve_triangular(low, scipy.linalg.solve_triangular(low, a, lower=True).T,
                                      lower=True)
    h = scipy.linalg.hessenberg((c + c.T) / 2)
    d, e = np.diag(h).copy(), np.diag(h, -1).copy()
    if split:
        e[rng.choice(n - 1, size=max(1, n // 8), replace=False)] = 0.0
    return d, e


@pytest.mark.parametrize("split", [False, True], ids=["one-block", "split"])
def test_slices_of_one_mrrr_root_are_orthogonal(rng, split):
    """What each rank computes: a slice of the vectors of one root representation (cut where
    root_cuts allows). Across the slices they are as orthogonal as one call's, within 10 % and
    1 n ε (in 42000 spectra never more than 0.15 n ε apart, and in 3000 more 0.07; but one CI run
    of 2026-12-06 drew n = 35, il = 16, iu = 35, two slices at 21.7 n ε against one call's 20.5,
    so the bound is relative too); independent dstemr calls per slice lost orthogonality on these
    spectra (about 3% of them, up to ~500 n ε). One call itself gives under 10 n ε on most and
    up to ~170 on about 1 in 2000 of them (dstemr's own spread, which an absolute bound of 100 on
    the slices failed on now and then)."""
    for _ in range(60):
        n = int(rng.integers(15, 50))
        d, e = _pencil_tridiagonal(rng, n, split)
        il = int(rng.integers(1, n // 2 + 1))
        iu = int(rng.choice([n, rng.integers(il, n + 1)]))
        root = MrrrRoot(d, e, il, iu)
        k = root.m
        assert k == iu - il + 1
        one_ortho, one_resid = tridiagonal_ratios(d, e, *root.vectors(1, k))
        assert one_ortho < 1000 and one_resid < 100, (n, il, iu, one_ortho, one_resid)
        for parts in (2, 3, 4):
            bounds = group_bounds(root_cuts(root), k, parts)
            slices = [root.vectors(bounds[r] + 1, bounds[r + 1]) for r in range(parts)]
            w = np.concatenate([s[0] for s in slices])
            z = np.hstack([s[1] for s in slices])
            assert z.shape == (n, k)
            ortho, resid = tridiagonal_ratios(d, e, w, z)
            assert ortho <= 1.1 * one_ortho + 1 and resid <= one_resid + 1, (n, il, iu, parts, ortho, one_ortho,
                                                                             resid, one_resid)
            expected = scipy.linalg.eigvalsh_tridiagonal(d, e)[il - 1:iu]
            np.testing.assert_allclose(np.sort(w), expected, atol=1e-12 * np.abs(expected).max())


def test_mrrr_root_refuses_what_dstemr_solves_in_closed_form():
    with pytest.raises(ValueError, match="n >= 3"):
        MrrrRoot(np.ones(2), np.ones(1), 1, 2)


def test_stemr_returns_only_the_wanted_vectors(rng):
    n = 45
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    w, z = stemr_vectors(d, e, 11, 20)
    assert z.shape == (n, 10) and w.shape == (10,)
    w_ref, z_ref = scipy.linalg.eigh_tridiagonal(d, e, select="i", select_range=(10, 19))
    np.testing.assert_allclose(w, w_ref, atol=1e-13)
    np.testing.assert_allclose(np.abs(np.sum(z * z_ref, axis=0)), 1.0, atol=1e-12)
    w1, z1 = stemr_vectors(d[:1], e[:0], 1, 1)
    assert w1.tolist() == d[:1].tolist() and z1.tolist() == [[1.0]]


def test_inverse_iteration_vectors_are_ascending_and_orthogonal(rng):
    """dstebz + dstein (the fallback where MRRR fails) on a split T with clusters: ascending
    eigenvalues whatever dstebz's block order, orthonormal vectors, small residuals."""
    d, e = _pencil_tridiagonal(rng, 40, split=True)
    w, z = stein_vectors(d, e, 5, 33)
    assert z.shape == (40, 29) and np.all(np.diff(w) >= 0)
    np.testing.assert_allclose(w, scipy.linalg.eigvalsh_tridiagonal(d, e)[4:33], atol=1e-12)
    ortho, resid = tridiagonal_ratios(d, e, w, z)
    assert ortho < 100 and resid < 100, (ortho, resid)
    assert stein_vectors(d, e, 5, 4)[1].shape == (40, 0)


def test_the_subsets_method_by_size_and_device():
    """MRRR for a few eigenpairs on the CPU, divide and conquer above a twentieth of n; in a GPU
    run inverse iteration up to a quarter of n, divide and conquer above; a range that names
    its method keeps it."""
    some = EigenRange.by_index(1, 10)
    assert choose_subset_solver(some, 10, 1000, on_gpu=False)[0] == "mrrr"
    assert choose_subset_solver(some, 50, 1000, on_gpu=False)[0] == "mrrr"
    assert choose_subset_solver(some, 51, 1000, on_gpu=False)[0] == "dc"
    assert choose_subset_solver(some, 10, 1000, on_gpu=True)[0] == "invit"
    assert choose_subset_solver(some, 250, 1000, on_gpu=True)[0] == "invit"
    assert choose_subset_solver(some, 251, 1000, on_gpu=True)[0] == "dc"
    assert choose_subset_solver(some.solved_by("invit"), 900, 1000, on_gpu=False) == ("invit", "asked for")
    assert choose_subset_solver(some.solved_by("mrrr"), 900, 1000, on_gpu=True) == ("mrrr", "asked for")
    assert choose_subset_solver(some.solved_by("dc"), 1, 1000, on_gpu=False) == ("dc", "asked for")
    with pytest.raises(InputError, match="subset solver"):
        some.solved_by("qr").check(20)
