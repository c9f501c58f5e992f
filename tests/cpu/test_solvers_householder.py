"""larft: the compact WY factor T of a product of Householder reflectors (numpy)."""
import numpy as np
import pytest

from solvers.householder import larft


def explicit_product(v, tau):
    """H₀ H₁ ⋯ H_{k-1} multiplied out, H_i = I - tau_i v_i v_iᵀ."""
    q = np.eye(v.shape[0])
    for i in range(v.shape[1]):
        q = q - tau[i] * np.outer(q @ v[:, i], v[:, i])
    return q


def reflectors(rng, m, k, identity_cols=()):
    """V as sytrd stores it (unit diagonal, zeros above), tau_i = 2 / v_iᵀv_i, and tau_i = 0
    (with a v_i that is not zero, so masking it matters) for ``identity_cols``."""
    v = np.tril(rng.standard_normal((m, k)), -1)
    v[np.arange(k), np.arange(k)] = 1
    tau = 2 / np.einsum("ij,ij->j", v, v)
    tau[list(identity_cols)] = 0
    return v, tau


@pytest.mark.parametrize("m,k,identity_cols", [
    (1, 1, ()), (7, 1, ()), (7, 1, (0,)), (9, 5, ()), (9, 5, (0, 3)), (40, 17, (16,)),
    (100, 64, ()), (100, 64, (0, 1, 31, 63)), (64, 64, (5, 6, 7))])
def test_larft_matches_the_explicit_product(m, k, identity_cols):
    seed = int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    v, tau = reflectors(rng, m, k, identity_cols)
    t = larft(np, v, tau)
    assert t.shape == (k, k) and np.array_equal(t, np.triu(t)), f"seed={seed}"
    np.testing.assert_allclose(np.eye(m) - v @ t @ v.T, explicit_product(v, tau),
                               atol=1e-13, err_msg=f"seed={seed}")
    np.testing.assert_array_equal(np.diag(t), tau)
    # The caller applies T with the unmasked V: identity reflectors must not reach the product.
    dead = list(identity_cols)
    assert not t[dead].any() and not t[:, dead].any(), f"seed={seed}"


def test_larft_single_precision():
    rng = np.random.default_rng()
    v, tau = reflectors(rng, 30, 8, (2,))
    v32, tau32 = v.astype(np.float32), tau.astype(np.float32)
    t = larft(np, v32, tau32)
    assert t.dtype == np.float32
    np.testing.assert_allclose(np.eye(30) - v @ t @ v.T, explicit_product(v32, tau32), atol=1e-5)
