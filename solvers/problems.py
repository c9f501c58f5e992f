"""Problems to solve: pencils with known or chosen spectra, for checking the solver and timing it
(the command line's embedded problem, the benchmarks, anyone's own checks).

``known_spectrum_problem``: a pencil whose eigenvalues are known exactly. With B = L Lᴴ and a
random orthogonal (real) or unitary (complex) Q, the standard matrix sygst / hegst produces is
Q Λ Qᴴ when
    itype 1:     A = L (Q Λ Qᴴ) Lᴴ         (then L⁻¹ A L⁻ᴴ = Q Λ Qᴴ)
    itype 2, 3:  A = L⁻ᴴ (Q Λ Qᴴ) L⁻¹      (then Lᴴ A L   = Q Λ Qᴴ)
so the eigenvalues are Λ up to the rounding of forming A and B. B = I + G Gᴴ / (2n) has its
spectrum in about [1, 3], so L is well conditioned and the comparison measures the solver, not
the problem. Generated on one rank with the run's array backend from ``seed``.

The other generators take a numpy Generator and ``hermitian=False`` (True gives complex128 data,
Haar-unitary Q): symmetric (Hermitian) matrices with a chosen spectrum, positive definite ones of
a chosen condition, random ones, and random Hermitian bands in LAPACK's lower band storage.
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


def gaussian(rng, shape, hermitian):
    """Standard normal entries of ``shape``, complex (real and imaginary parts each standard
    normal) where ``hermitian``."""
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if hermitian else x


def random_orthogonal(rng, n, hermitian=False):
    """Haar-distributed orthogonal (unitary if ``hermitian``) matrix."""
    q, r = np.linalg.qr(gaussian(rng, (n, n), hermitian))
    d = np.diag(r)
    return q * (d / np.abs(d))


def symmetric_with_spectrum(rng, eigenvalues, hermitian=False):
    q = random_orthogonal(rng, len(eigenvalues), hermitian)
    a = (q * np.asarray(eigenvalues)) @ q.conj().T
    return (a + a.conj().T) / 2


SPECTRA = ("random", "clustered", "graded")


def spectrum(rng, n, kind):
    """Eigenvalues of a test matrix: 'random' (uniform in [-1, 1]), 'clustered' (three tight
    clusters, spacing 1e-12 — stresses eigenvector orthogonality), 'graded' (magnitudes from 1
    down to 1e-10 with random signs)."""
    if kind == "random":
        return rng.uniform(-1, 1, n)
    if kind == "clustered":
        centers = rng.choice([-1.0, 0.25, 2.0], size=n)
        return centers + 1e-12 * rng.standard_normal(n)
    if kind == "graded":
        return rng.choice([-1.0, 1.0], size=n) * np.logspace(0, -10, n)
    raise ValueError(f"unknown spectrum kind {kind!r}; choose from {SPECTRA}")


def spd_with_condition(rng, n, cond, hermitian=False):
    """SPD (HPD) matrix with eigenvalues log-spaced in [1, cond]."""
    return symmetric_with_spectrum(rng, np.logspace(0, np.log10(cond), n), hermitian)


def random_symmetric(rng, n, hermitian=False):
    a = gaussian(rng, (n, n), hermitian)
    return (a + a.conj().T) / 2


def random_band(rng, n, band, dtype):
    """A random Hermitian band in lower band storage, ab[j, d] = B[j+d, j] (n × (band+1); the
    entries past row n-1 zero), of ``dtype``."""
    ab = gaussian(rng, (n, band + 1), np.dtype(dtype).kind == "c")
    for d in range(1, band + 1):
        ab[max(n - d, 0):, d] = 0
    return ab.astype(dtype)


def band_to_full(ab):
    """The Hermitian matrix of the lower band storage ab[j, d] = B[j+d, j] (diagonal taken real)."""
    n, width = ab.shape
    full = np.zeros((n, n), dtype=ab.dtype)
    for d in range(min(width, n)):
        j = np.arange(n - d)
        full[j + d, j] = ab[:n - d, d]
        if d:
            full[j, j + d] = ab[:n - d, d].conj()
    full[np.diag_indices(n)] = full.diagonal().real
    return full
