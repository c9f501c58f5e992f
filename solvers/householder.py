"""Householder reflectors: generation (larfg) and the block form of a product (larft).

A reflector is H = I - tau v vᵀ with v[0] = 1. ``larfg`` is written without Python branches on
values (``where`` instead of ``if``) so that on a GPU it queues kernels without reading anything
back to the host: the per-column step of sytrd must be capturable in a CUDA graph.
Unlike LAPACK's dlarfg there is no rescaling loop for norms near the underflow threshold.
"""
import numpy as np


def larfg(xp, x):
    """(v, beta, tau) with (I - tau v vᵀ) x = beta e₁; beta, tau are 0-d arrays.

    If x[1:] is zero, H = I (tau = 0, beta = x[0]) as in LAPACK, so no column is reflected
    for nothing and an already-tridiagonal matrix is left untouched.
    """
    alpha = x[0]
    xnorm = xp.linalg.norm(x[1:]) if x.shape[0] > 1 else xp.zeros((), dtype=x.dtype)
    beta = -xp.copysign(xp.hypot(alpha, xnorm), alpha)
    trivial = xnorm == 0
    one = xp.ones((), dtype=x.dtype)
    # The reflector's sign is chosen so that alpha - beta never cancels (|alpha| + |beta|).
    tau = xp.where(trivial, 0, (beta - alpha) / xp.where(trivial, one, beta))
    v = x / xp.where(trivial, one, alpha - beta)
    v[0] = 1
    return v, xp.where(trivial, alpha, beta), tau.astype(x.dtype)


def larft(xp, v, tau):
    """Upper-triangular T with H₀ H₁ ⋯ H_{k-1} = I - V T Vᵀ (forward, column-wise storage).

    Built one column at a time from the Gram matrix VᵀV: T[:i, i] = -tau_i T[:i, :i] Vᵀ v_i.
    """
    k = v.shape[1]
    gram = v.T @ v
    t = xp.zeros((k, k), dtype=v.dtype)
    for i in range(k):
        t[i, i] = tau[i]
        if i:
            t[:i, i] = -tau[i] * (t[:i, :i] @ gram[:i, i])
    return t


def quiet_division():
    """The where() above evaluates both branches; silence numpy's 0/0 warnings there."""
    return np.errstate(divide="ignore", invalid="ignore")
