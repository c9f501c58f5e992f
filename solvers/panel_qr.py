"""The QR factorization of sy2sb's panels (m × w, m up to n, w the bandwidth: tall and skinny):
CholeskyQR2 with Householder reconstruction, LAPACK's geqrf where that cannot be trusted.

geqrf works column by column; on a GPU that is a chain of small launches per column, and its
panels were half of sy2sb's time (docs/PERFORMANCE.md). CholeskyQR2 (Fukaya, Nakatsukasa,
Yanagisawa, Yamamoto, ScalA 2014) is two passes of

    R₁ = chol(AᴴA),  Q₁ = A R₁⁻¹,     then     R₂ = chol(Q₁ᴴQ₁),  Q = Q₁ R₂⁻¹,  R = R₂ R₁,

products of inner dimension w and two w × w Cholesky factorizations. sy2sb and ormtr need the
factorization as reflectors, H = I - V T Vᴴ with H [R_h; 0] = A; they follow from Q by Householder
reconstruction (solvers/native/householder_reconstruction.h: E - Q D = V U, D a diagonal of
signs): V = [V₁; -Q₂ D U⁻¹], tau = diag(U), T = U V₁⁻ᴴ, R_h = Dᴴ R. Everything of order w × w is
done on the host, which needs one read-back of the device per panel.

When it is trusted: the second pass makes Q orthonormal to working precision when it starts
from a Q₁ that is nearly orthonormal, and Q₁ᴴQ₁ is at hand, so the test is
‖Q₁ᴴQ₁ - I‖_max ≤ ORTHOGONALITY_LIMIT (it also fails when the first Cholesky broke down, whose
factor is left unread on the GPU: see backend.arrays.cholesky_lower_queued). A panel of rank below
w (a zero panel: the matrix was banded already) or with condition number beyond about u^(-1/2)
fails it, and geqrf factors that panel. Q₁ comes from a triangular solve, so A = Q R holds to
working precision whatever R₁'s conditioning.
"""
import numpy as np

from .backend.arrays import (adjoint_product, cholesky_lower_queued, cholesky_lower_whole, is_numpy,
                             solve_lower_adjoint_right, solve_triangular, to_host)
from .backend.threads import one_blas_thread
from .householder import larft
from .sytrd_native import kernels

ORTHOGONALITY_LIMIT = 0.1   # ‖Q₁ᴴQ₁ - I‖_max at which the second pass still gives Q to working precision


def panel_qr(xp, panel):
    """(V, T, R, tau, method) of panel = H [R; 0], H = I - V T Vᴴ = H₀ ⋯ H_{k-1} (k = min(m, w)):
    V (m × w) unit lower trapezoidal with zero columns past k, T (w × w) upper, R (k × w) upper,
    tau (w); ``method`` names what factored it: "cholqr2" or "geqrf"."""
    m, w = panel.shape
    native, _ = kernels()
    if m < w or w == 0 or native is None:
        return (*geqrf_panel(xp, panel), "geqrf")
    if is_numpy(xp):
        l1, info = cholesky_lower_whole(xp, adjoint_product(xp, panel, panel))
        if info:
            return (*geqrf_panel(xp, panel), "geqrf")
    else:
        l1, _ = cholesky_lower_queued(xp, adjoint_product(xp, panel, panel))
    q1 = solve_lower_adjoint_right(xp, l1, panel)
    top = to_host(xp.concatenate([adjoint_product(xp, q1, q1), q1[:w]]))     # the one read-back
    with one_blas_thread():
        small = _reconstruction(native, top[:w], top[w:])
    if small is None:
        return (*geqrf_panel(xp, panel), "geqrf")
    small = xp.asarray(small)                                                  # the one copy back
    v1, k, d_r2, t, tau = small[:w], small[w:2 * w], small[2 * w:3 * w], small[3 * w:4 * w], small[4 * w]
    v = xp.empty((m, w), dtype=panel.dtype)
    v[:w] = v1
    v[w:] = q1[w:] @ k                        # V₂ = -Q₂ D U⁻¹ = Q₁[w:] (-R₂⁻¹ D U⁻¹)
    r = d_r2 @ xp.tril(l1).conj().T           # R_h = Dᴴ R₂ R₁
    return v, t, r, tau, "cholqr2"


def _reconstruction(native, gram, q1_top):
    """The w × w parts of the panel's factors, on the host, from Q₁ᴴQ₁ and Q₁'s top block:
    V₁, K = -R₂⁻¹ D U⁻¹, Dᴴ R₂, T stacked (4w × w) over tau (one row), or None when CholeskyQR2
    is not to be trusted. Small calls: the caller runs it with BLAS at one thread."""
    w = gram.shape[0]
    eye = np.eye(w, dtype=gram.dtype)
    if not np.abs(gram - eye).max() <= ORTHOGONALITY_LIMIT:     # NaN fails too
        return None
    l2, info = cholesky_lower_whole(np, gram)
    if info:
        return None
    lu = np.ascontiguousarray(solve_lower_adjoint_right(np, l2, q1_top))      # Q's top block
    d = np.empty(w, dtype=gram.dtype)
    native.householder_reconstruction(native.DTYPES[gram.dtype.name], w, lu.ctypes.data, w, d.ctypes.data)
    v1 = np.tril(lu, -1) + eye
    u = np.triu(lu)
    r2 = np.tril(l2).conj().T
    k = -solve_triangular(np, r2, d[:, None] * solve_triangular(np, u, eye, lower=False), lower=False)
    t = solve_lower_adjoint_right(np, v1, u)
    return np.concatenate([v1, k, d.conj()[:, None] * r2, t, np.diag(u)[None, :]])


def geqrf_panel(xp, panel):
    """(V, T, R, tau) of panel_qr by LAPACK's / cuSOLVER's geqrf and larft."""
    m, w = panel.shape
    k = min(m, w)
    h, tau = xp.linalg.qr(panel, mode="raw")    # h = LAPACK geqrf's output, transposed
    f = h.T.astype(panel.dtype, copy=False)
    tau = tau.astype(panel.dtype, copy=False)
    v = xp.zeros((m, w), dtype=panel.dtype)
    v[:, :k] = xp.tril(f[:, :k], -1)
    v[xp.arange(k), xp.arange(k)] = 1
    tau_w = xp.zeros(w, dtype=panel.dtype)
    tau_w[:k] = tau[:k]
    return v, larft(xp, v, tau_w), xp.triu(f[:k]), tau_w
