"""The embedded test problem: a pencil whose eigenvalues are known exactly.

With B = L Lᴴ and a random orthogonal (real) or unitary (complex) Q, the standard matrix sygst
/ hegst produces is Q Λ Qᴴ when
    itype 1:     A = L (Q Λ Qᴴ) Lᴴ         (then L⁻¹ A L⁻ᴴ = Q Λ Qᴴ)
    itype 2, 3:  A = L⁻ᴴ (Q Λ Qᴴ) L⁻¹      (then Lᴴ A L   = Q Λ Qᴴ)
so the eigenvalues are Λ up to the rounding of forming A and B. B = I + G Gᴴ / (2n) has its
spectrum in about [1, 3], so L is well conditioned and the comparison measures the solver, not
the problem. Generated on one rank with the run's array backend from ``seed``.
"""
import numpy as np


def known_spectrum_problem(n, itype, seed, xp=np, hermitian=False):
    """(A, B, Λ) in float64 (complex128 if ``hermitian``) on the backend ``xp``; Λ (float64)
    ascending, spread over [-1, 1]."""
    rng = np.random.default_rng(seed)
    lam = np.sort(rng.uniform(-1.0, 1.0, n))

    def gaussian():
        g = rng.standard_normal((n, n))
        return xp.asarray(g + 1j * rng.standard_normal((n, n)) if hermitian else g)

    q, _ = xp.linalg.qr(gaussian())
    g = gaussian()
    b = xp.eye(n) + (g @ g.conj().T) / (2 * n)
    lfac = xp.linalg.cholesky(b)
    middle = (q * xp.asarray(lam)) @ q.conj().T
    if itype == 1:
        a = lfac @ middle @ lfac.conj().T
    else:
        linv = xp.linalg.inv(lfac)
        a = linv.conj().T @ middle @ linv
    a = (a + a.conj().T) / 2
    b = (b + b.conj().T) / 2
    return a, b, lam
