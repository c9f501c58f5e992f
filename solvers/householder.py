"""Householder reflectors: generation (larfg) and the block form of a product (larft).

A reflector is H = I - tau v vᴴ with v[0] = 1 (vᴴ = vᵀ for real data; for complex data LAPACK's
zlarfg conventions: tau complex, the reflected value beta real). ``larfg`` is written without Python branches on
values (``where`` instead of ``if``) so that on a GPU it queues kernels without reading anything
back to the host: the per-column step of sytrd must be capturable in a CUDA graph.
Unlike LAPACK's dlarfg there is no rescaling loop for norms near the underflow threshold.
"""
import math

import numpy as np

from .backend.arrays import is_numpy, solve_triangular


def larfg(xp, x):
    """(v, beta, tau) with Hᴴ x = beta e₁, H = I - tau v vᴴ; beta (real), tau are 0-d arrays.

    As LAPACK's s/d/c/zlarfg: beta = -sign(Re x₀) ‖x‖₂, tau = (beta - x₀) / beta,
    v = x / (x₀ - beta) with v₀ = 1. If x[1:] is zero and x₀ is real, H = I (tau = 0,
    beta = x₀), so no column is reflected for nothing and an already-tridiagonal matrix is left
    untouched; a complex x₀ is still reflected, to make beta real.
    """
    alpha = x[0]
    real = alpha.real.dtype
    xnorm = xp.linalg.norm(x[1:]) if x.shape[0] > 1 else xp.zeros((), dtype=real)
    beta = -xp.copysign(xp.hypot(xp.abs(alpha), xnorm), alpha.real)
    trivial = (xnorm == 0) & (alpha.imag == 0)
    one = xp.ones((), dtype=real)
    # The reflector's sign is chosen so that alpha - beta never cancels (|Re alpha| + |beta|).
    tau = xp.where(trivial, 0, (beta - alpha) / xp.where(trivial, one, beta))
    v = x / xp.where(trivial, one, alpha - beta)
    v[0] = 1
    return v, xp.where(trivial, alpha.real, beta), tau.astype(x.dtype)


def larfg_scalars(alpha, xnorm):
    """``larfg``'s rules on Python numbers, for a host loop that keeps x in its own buffer:
    (beta, tau, scale) from alpha = x₀ and xnorm = ‖x[1:]‖₂, with v = (1, scale · x[1:]).
    Python's arithmetic costs a fraction of a microsecond a step where a 0-d array's costs one."""
    if xnorm == 0 and alpha.imag == 0:
        return alpha.real, 0 * alpha, 1
    beta = -math.copysign(math.hypot(abs(alpha), xnorm), alpha.real)
    return beta, (beta - alpha) / beta, 1 / (alpha - beta)


def larft(xp, v, tau):
    """Upper-triangular T with H₀ H₁ ⋯ H_{k-1} = I - V T Vᴴ (forward, column-wise storage).

    The closed form of the compact WY "UT transform" (Joffrain, Low, Quintana-Ortí, van de
    Geijn, ACM TOMS 32(2), 2006): T = S⁻¹ with S = strict_upper(VᴴV) + diag(1/tau), one Gram
    product and one triangular solve instead of a small product per column (a kernel launch
    each on a GPU). Solved as T = (D S)⁻¹ D with D = diag(tau), where D S = I + D
    strict_upper(VᴴV) has a unit diagonal: nothing is divided by tau, and a reflector with
    tau_i = 0 (the identity, for which S is undefined) needs no special case: row i of D S is
    then e_i and column i of D is zero, so row and column i of T are exactly zero, as in LAPACK,
    and the caller applies T with V as it is.

    A batch (v: batch × m × k, tau: batch × k; ormtr_sb2st's groups) gives the T of each
    (batch × k × k), by a batched inverse of D S in place of the triangular solve (numpy and
    cupy have batched inverses, not batched triangular solves). On the host the inverse serves
    one T too: it is numpy's own LAPACK, the OpenBLAS of the products around it, where scipy's
    triangular solve would wake a second OpenBLAS's threads between them, which spin against
    the first's (docs/PERFORMANCE.md#solver-larft-host). D S has a
    unit diagonal and zeros below it, so its LU takes no pivots and is D S itself.
    """
    k = v.shape[-1]
    gram = xp.swapaxes(v.conj(), -1, -2) @ v
    ds = xp.eye(k, dtype=v.dtype) + tau[..., :, None] * xp.triu(gram, 1)
    if v.ndim == 2 and not is_numpy(xp):
        return solve_triangular(xp, ds, xp.diag(tau), lower=False)
    return xp.linalg.inv(ds) * tau[..., None, :]


def quiet_division():
    """The where() above evaluates both branches; silence numpy's 0/0 warnings there."""
    return np.errstate(divide="ignore", invalid="ignore")
