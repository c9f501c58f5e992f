"""Accuracy checks of a computed eigen-decomposition (LAPACK dsgt01 / zsgt01-style ratios).

    itype 1:  ‖A Z − B Z Λ‖₁ / (‖A‖₁ ‖Z‖₁ n ε)
    itype 2:  ‖A B Z − Z Λ‖₁ / (‖A‖₁ ‖B‖₁ ‖Z‖₁ n ε)
    itype 3:  ‖B A Z − Z Λ‖₁ / (‖A‖₁ ‖B‖₁ ‖Z‖₁ n ε)
    orthogonality: ‖Zᴴ B Z − I‖₁ / (n ε)  (itype 1, 2),  ‖Zᴴ B⁻¹ Z − I‖₁ / (n ε)  (itype 3)
Eigenvalues only (jobz = N): maxᵢ |λᵢ − λ_ref,ᵢ| / (n ε sᵢ) with λ_ref from scipy and sᵢ the
first-order sensitivity of λᵢ to relative perturbations ε of A and B:
sᵢ = (‖A‖₁ + |λᵢ| ‖B‖₁) ‖B⁻¹‖₁ for itype 1, ‖A‖₁ ‖B‖₁ for itypes 2 and 3.
ε is the working precision's; the arithmetic of the check is float64 (complex128), on the backend of the
arrays given (cupy on a GPU run, so that large checks stay fast). Pass: ratio < 400
(ScaLAPACK's threshold for the generalized drivers).
"""
import numpy as np
import scipy.linalg

from ..backend.arrays import array_module, solve_triangular
from ..subset import positions

THRESHOLD = 400.0


def _norm1(x):
    """Largest absolute column sum (the matrix 1-norm), as a Python float."""
    return float(abs(x).sum(axis=0).max()) if x.size else 0.0


def eigen_ratios(a, b, w, z, itype, eps):
    """dsgt01 / zsgt01 residual and orthogonality ratios for full symmetric / Hermitian a, b
    (float64 or complex128 numpy or cupy arrays; w, z of the same kind)."""
    xp = array_module(a)
    n = a.shape[0]
    if itype == 1:
        resid = a @ z - (b @ z) * w
        scale = _norm1(a) * _norm1(z)
    else:
        product = a @ (b @ z) if itype == 2 else b @ (a @ z)
        resid = product - z * w
        scale = _norm1(a) * _norm1(b) * _norm1(z)
    if itype == 3:
        # Zᴴ B⁻¹ Z = (L⁻¹ Z)ᴴ (L⁻¹ Z) with B = L Lᴴ
        half = solve_triangular(xp, xp.linalg.cholesky(b), z, lower=True)
        gram = half.conj().T @ half
    else:
        gram = z.conj().T @ (b @ z)
    denom = n * eps
    return {"residual": _norm1(resid) / (max(scale, np.finfo(float).tiny) * denom),
            "orthogonality": _norm1(gram - xp.eye(z.shape[1])) / denom}


def eigenvalue_ratio(a, b, w, itype, eps, subset=None):
    """Eigenvalue error against scipy, relative to the perturbation bound (jobz = N); with
    ``subset`` (subset.EigenRange), against the eigenvalues it selects."""
    n = a.shape[0]
    ref = scipy.linalg.eigh(a, b, type=itype, eigvals_only=True)
    ref = ref[positions(ref, subset)]
    if ref.shape != np.shape(w):
        return {"eigenvalues": float("inf")}   # a different count fails the check
    if itype == 1:
        scale = (_norm1(a) + np.abs(ref) * _norm1(b)) * _norm1(np.linalg.inv(b))
    else:
        scale = np.full(ref.shape[0], _norm1(a) * _norm1(b))
    scale = np.maximum(scale, np.finfo(float).tiny)
    worst = float((np.abs(np.asarray(w) - ref) / scale).max()) if ref.size else 0.0
    return {"eigenvalues": worst / (n * eps)}


def full_from_triangle(x, lower):
    """The symmetric / Hermitian matrix whose lower (upper) triangle is that of x, with the real
    part of x's diagonal (its imaginary part is not read, as in LAPACK)."""
    strict = np.tril(x, -1) if lower else np.triu(x, 1)
    return strict + strict.conj().T + np.diag(np.diag(x).real)
