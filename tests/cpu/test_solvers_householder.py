"""larfg against LAPACK's s/d/c/zlarfg; larft: the compact WY factor T of a product of
Householder reflectors, real and complex (numpy)."""
import numpy as np
import pytest
import scipy.linalg.lapack

from solvers.householder import larfg, larft


def explicit_product(v, tau):
    """H₀ H₁ ⋯ H_{k-1} multiplied out, H_i = I - tau_i v_i v_iᴴ."""
    q = np.eye(v.shape[0], dtype=v.dtype)
    for i in range(v.shape[1]):
        q = q - tau[i] * np.outer(q @ v[:, i], v[:, i].conj())
    return q


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128])
@pytest.mark.parametrize("case", ["random", "tail_zero", "one"])
def test_larfg_is_lapacks(dtype, case):
    """Same beta (real), tau and v as LAPACK's larfg, and Hᴴ x = beta e₁."""
    rng = np.random.default_rng()
    complex_ = np.dtype(dtype).kind == "c"
    x = rng.standard_normal(7) + (1j * rng.standard_normal(7) if complex_ else 0)
    if case == "tail_zero":   # real x₀: H = I; complex x₀: still reflected, to make beta real
        x[1:] = 0
    x = x[:1] if case == "one" else x
    x = x.astype(dtype)
    v, beta, tau = larfg(np, x.copy())
    lapack = scipy.linalg.lapack.get_lapack_funcs("larfg", (x,))
    alpha, tail, tau_ref = lapack(x.shape[0], x[0], x[1:].copy() if x.shape[0] > 1 else np.zeros(1, dtype), 1)
    rtol = 1e-4 if np.dtype(dtype) in (np.float32, np.complex64) else 1e-12
    assert np.isrealobj(beta) and tau.dtype == dtype
    np.testing.assert_allclose(beta, np.real(alpha), rtol=rtol)
    np.testing.assert_allclose(tau, tau_ref, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(v[1:], tail[:x.shape[0] - 1], rtol=rtol, atol=rtol)
    h = np.eye(x.shape[0]) - tau * np.outer(v, v.conj())
    np.testing.assert_allclose(h.conj().T @ x, np.eye(x.shape[0])[0] * beta, atol=10 * rtol * np.abs(x).max())


def test_larft_complex():
    rng = np.random.default_rng()
    v = np.tril(rng.standard_normal((12, 5)) + 1j * rng.standard_normal((12, 5)), -1)
    v[np.arange(5), np.arange(5)] = 1
    tau = rng.standard_normal(5) + 1j * rng.standard_normal(5)
    tau[3] = 0
    t = larft(np, v, tau)
    np.testing.assert_allclose(np.eye(12) - v @ t @ v.conj().T, explicit_product(v, tau), atol=1e-13)


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
