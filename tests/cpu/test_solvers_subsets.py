"""The pieces of eigenpair subsets that need no MPI: LAPACK's RANGE (parsing, LAPACK's validity
rules), Sturm counts against computed spectra, the selection kept from a full result, and the
cut rule of the eigenvector groups (never inside a cluster), plus dstemr's n × k call against
scipy's eigh_tridiagonal."""
import math

import numpy as np
import pytest
import scipy.linalg

from solvers.backend.lapack import stemr_vectors
from solvers.errors import InputError
from solvers.stemr import group_bounds
from solvers.subset import EigenRange, count_at_most, positions
from solvers.testing import shared_seed


@pytest.fixture
def rng():
    return np.random.default_rng(shared_seed())


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


def test_groups_are_even_where_gaps_allow_and_never_split_a_cluster(rng):
    w = np.linspace(-1, 1, 40)
    assert group_bounds(w, 1e-3, 4).tolist() == [0, 10, 20, 30, 40]
    cluster = np.sort(np.concatenate([np.linspace(-1, 0, 20), 0.5 + 1e-13 * np.arange(12),
                                      np.linspace(0.6, 1, 8)]))
    bounds = group_bounds(cluster, 1e-3, 4)
    assert bounds[0] == 0 and bounds[-1] == 40 and np.all(np.diff(bounds) >= 0)
    inside = set(range(21, 32))   # a cut at c splits the cluster w[20:32] when 20 < c < 32
    assert not inside & set(bounds.tolist()), bounds
    assert group_bounds(np.zeros(7), 1e-3, 3).tolist() == [0, 7, 7, 7]   # all one cluster
    assert group_bounds(np.zeros(0), 1e-3, 3).tolist() == [0, 0, 0, 0]
    assert group_bounds(w, 1e-3, 1).tolist() == [0, 40]


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
