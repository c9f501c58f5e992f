"""The embedded test problem: a pencil whose eigenvalues are known exactly.

With B = L Lᵀ and a random orthogonal Q, the standard matrix sygst produces is Q Λ Qᵀ when
    itype 1:     A = L (Q Λ Qᵀ) Lᵀ         (then L⁻¹ A L⁻ᵀ = Q Λ Qᵀ)
    itype 2, 3:  A = L⁻ᵀ (Q Λ Qᵀ) L⁻¹      (then Lᵀ A L   = Q Λ Qᵀ)
so the eigenvalues are Λ up to the rounding of forming A and B. B = I + G Gᵀ / (2n) has its
spectrum in about [1, 3], so L is well conditioned and the comparison measures the solver, not
the problem. Generated on one rank with the run's array backend from ``seed``.
"""
import numpy as np


def known_spectrum_problem(n, itype, seed, xp=np):
    """(A, B, Λ) in float64 on the backend ``xp``; Λ ascending, spread over [-1, 1]."""
    rng = np.random.default_rng(seed)
    lam = np.sort(rng.uniform(-1.0, 1.0, n))
    q, _ = xp.linalg.qr(xp.asarray(rng.standard_normal((n, n))))
    g = xp.asarray(rng.standard_normal((n, n)))
    b = xp.eye(n) + (g @ g.T) / (2 * n)
    lfac = xp.linalg.cholesky(b)
    middle = (q * xp.asarray(lam)) @ q.T
    if itype == 1:
        a = lfac @ middle @ lfac.T
    else:
        linv = xp.linalg.inv(lfac)
        a = linv.T @ middle @ linv
    a = (a + a.T) / 2
    b = (b + b.T) / 2
    return a, b, lam
