"""stedc (divide and conquer for the tridiagonal eigenproblem) on numpy, with small leaves so
that every merge path runs: residual, orthogonality and eigenvalues against LAPACK."""
import numpy as np
import pytest
import scipy.linalg

from solvers.stedc import stedc
from solvers.testing import shared_seed
from solvers.tridiagonal import _stevd_host

EPS = np.finfo(np.float64).eps


def _leaf(d, e):
    return _stevd_host(d, e, True)


def _tridiagonals(rng):
    """(name, d, e): random, and the shapes that stress deflation and the root finder."""
    n = 300
    d0, e0 = rng.standard_normal(40), rng.standard_normal(39)
    copies_d = np.tile(d0, 6)
    copies_e = np.concatenate([np.append(e0, 0.0) for _ in range(6)])[:-1]
    weak_e = copies_e.copy()
    weak_e[39::40] = 1e-13 * rng.standard_normal(5)
    m = n // 2
    return [
        ("random", rng.standard_normal(n), rng.standard_normal(n - 1)),
        ("random odd order", rng.standard_normal(n + 37), rng.standard_normal(n + 36)),
        ("identity", np.ones(n), np.zeros(n - 1)),
        ("constant, tiny coupling", np.full(n, 3.0), np.full(n - 1, 1e-17)),
        ("toeplitz 2,1 (clustered)", np.full(n, 2.0), np.ones(n - 1)),
        ("graded", 10.0 ** (-np.arange(n) / 20), 10.0 ** (-np.arange(n - 1) / 20)),
        ("wilkinson W+", np.abs(np.arange(-m, m + 1)).astype(float), np.ones(2 * m)),
        ("exact copies (equal poles)", copies_d, copies_e),
        ("copies weakly coupled", copies_d, weak_e),
        ("negative couplings", rng.standard_normal(n), -np.abs(rng.standard_normal(n - 1))),
        ("huge scale", 1e150 * rng.standard_normal(n), 1e150 * rng.standard_normal(n - 1)),
    ]


@pytest.mark.parametrize("leaf_size", [1, 7, 32])
def test_stedc_against_lapack(leaf_size):
    seed = shared_seed()
    for name, d, e in _tridiagonals(np.random.default_rng(seed)):
        n = d.shape[0]
        w, z = stedc(np, d, e, _leaf, leaf_size)
        t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
        norm = np.abs(t).max()
        what = f"seed={seed} {name} leaf={leaf_size}"
        assert np.all(np.diff(w) >= 0), what + ": not ascending"
        assert np.abs(t @ z - z * w).max() <= 10 * n * EPS * norm, what + ": residual"
        assert np.abs(z.T @ z - np.eye(n)).max() <= 10 * n * EPS, what + ": orthogonality"
        want = scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True)
        np.testing.assert_allclose(w, want, rtol=0, atol=10 * n * EPS * norm, err_msg=what)


def test_stedc_small_orders_go_to_the_leaf():
    calls = []

    def leaf(d, e):
        calls.append(d.shape[0])
        return _leaf(d, e)

    w, z = stedc(np, np.array([2.0]), np.zeros(0), leaf, 4)
    assert calls == [1] and w.tolist() == [2.0] and z.tolist() == [[1.0]]
    stedc(np, np.arange(9.0), np.ones(8), leaf, 4)
    assert calls[1:] == [4, 2, 3], calls   # 9 -> 4 + 5, and 5 -> 2 + 3
