"""The QR factorization of sy2sb's panels (m × w, m up to n, w the bandwidth: tall and skinny):
CholeskyQR2 with Householder reconstruction, LAPACK's geqrf where that cannot be trusted.

geqrf works column by column; on a GPU that is a chain of small launches per column, and its
panels were half of sy2sb's time (docs/PERFORMANCE.md#solver-panel-method). CholeskyQR2 (Fukaya, Nakatsukasa,
Yanagisawa, Yamamoto, ScalA 2014) is two passes of

    R₁ = chol(AᴴA),  Q₁ = A R₁⁻¹,     then     R₂ = chol(Q₁ᴴQ₁),  Q = Q₁ R₂⁻¹,  R = R₂ R₁,

products of inner dimension w and two w × w Cholesky factorizations. sy2sb and ormtr need the
factorization as reflectors, H = I - V T Vᴴ with H [R_h; 0] = A; they follow from Q by Householder
reconstruction (E - Q D = V U, D a diagonal of signs): V = [V₁; -Q₂ D U⁻¹], tau = diag(U),
T = U V₁⁻ᴴ, R_h = Dᴴ R. Everything of order w × w (the second Cholesky, the reconstruction, T, R)
is one native call (native/solvers/panel_factors.h). On the GPU, for w <= 64, the whole of it is
one native call (native/solvers/panel_cholqr2.h: a few kernels, the tall products our own) whose
status is the panel's one read-back: each cupy call costs tens of microseconds of host time, so
a sequence of them was slower than geqrf's launches. Elsewhere (the host, wider GPU panels) the
products and the first Cholesky are BLAS / LAPACK calls around the w × w part.

When it is trusted: the second pass makes Q orthonormal to working precision when it starts
from a Q₁ that is nearly orthonormal, and Q₁ᴴQ₁ is at hand, so the test is
‖Q₁ᴴQ₁ - I‖_max ≤ ORTHOGONALITY_LIMIT (it also fails when the first Cholesky broke down, whose
factor is left unread on the GPU: see backend.arrays.cholesky_lower_queued). A panel of rank below
w (a zero panel: the matrix was banded already) or with condition number beyond about u^(-1/2)
fails it, and geqrf factors that panel. Q₁ comes from a triangular solve, so A = Q R holds to
working precision whatever R₁'s conditioning; the GPU's one call multiplies by R₁⁻¹ instead,
formed row by row, which adds a factor ‖|R₁⁻¹| |R₁|‖ to that residual (panel_cholqr2.h).
"""
import numpy as np

from .backend.arrays import (add_product, adjoint_product, cholesky_lower_queued, cholesky_lower_whole, is_numpy,
                             solve_lower_adjoint_right)
from .householder import larft
from .kernels import kernels
from .plan import panel_method

ORTHOGONALITY_LIMIT = 0.1   # ‖Q₁ᴴQ₁ - I‖_max at which the second pass still gives Q to working precision


def panel_qr(xp, panel, method="auto", status=None):
    """(V, T, R, tau, used) of panel = H [R; 0], H = I - V T Vᴴ = H₀ ⋯ H_{k-1} (k = min(m, w)):
    V (m × w) unit lower trapezoidal with zero columns past k, T (w × w) upper, R (k × w) upper,
    tau (w); ``used`` names what factored it: "cholqr2" or "geqrf". ``method``: "cholqr2"
    (CholeskyQR2 where it can be trusted, else geqrf), "geqrf" (always), or "auto" (plan.AUTO_PANEL
    of the array's device). ``status``: a one-element int32 device array; where the GPU's one-call
    CholeskyQR2 factors the panel, its status goes there instead of being read back (no wait for
    the device), and the factors come back unchecked, used "cholqr2 unchecked": the caller must
    not trust them before it reads a 0 there. Every other path leaves ``status`` as it is."""
    method = panel_method(method, not is_numpy(xp))
    m, w = panel.shape
    native, _ = kernels()
    if m < w or w == 0 or native is None or method == "geqrf":
        return (*geqrf_panel(xp, panel), "geqrf")
    one_call = not is_numpy(xp) and w <= native.PANEL_CHOLQR2_MAX_WIDTH
    if one_call and status is not None:
        return (*native_cholqr2(xp, native, panel, status), "cholqr2 unchecked")
    factors = (native_cholqr2 if one_call else composed_cholqr2)(xp, native, panel)
    return (*factors, "cholqr2") if factors is not None else (*geqrf_panel(xp, panel), "geqrf")


def composed_cholqr2(xp, native, panel):
    """(V, T, R, tau) by CholeskyQR2 from BLAS / LAPACK (cuBLAS / cuSOLVER) calls around the
    native w × w part, or None when it is not to be trusted: the host's path, and the GPU's for
    panels wider than native_cholqr2 takes."""
    m, w = panel.shape
    if is_numpy(xp):
        l1, info = cholesky_lower_whole(xp, adjoint_product(xp, panel, panel))
        if info:
            return None
    else:
        l1, _ = cholesky_lower_queued(xp, adjoint_product(xp, panel, panel))
    q1 = xp.ascontiguousarray(solve_lower_adjoint_right(xp, l1, panel))
    out = _factors(xp, native, adjoint_product(xp, q1, q1), q1[:w], xp.ascontiguousarray(l1))
    if out is None:
        return None
    v = xp.zeros((m, w), dtype=panel.dtype)
    v[:w] = out[:w]
    add_product(xp, v[w:], q1[w:], out[w:2 * w])         # V₂ = Q₁[w:] K
    return v, out[2 * w:3 * w], out[3 * w:4 * w], out[4 * w]


def native_cholqr2(xp, native, panel, status=None):
    """(V, T, R, tau) by CholeskyQR2 in one native call on the GPU (native/solvers/panel_cholqr2.h:
    a few kernels, w <= PANEL_CHOLQR2_MAX_WIDTH), or None when it is not to be trusted; the
    status read back is the panel's one wait for the device. With ``status`` (a one-element int32
    device array) the status goes there, unread, and the factors come back unchecked."""
    m, w = panel.shape
    item = panel.itemsize
    if panel.strides[1] != item or panel.strides[0] < w * item or panel.strides[0] % item:
        panel = xp.ascontiguousarray(panel)
    v = xp.empty((m, w), dtype=panel.dtype)
    out = xp.empty((4 * w + 1, w), dtype=panel.dtype)
    scratch = xp.empty(native.panel_cholqr2_scratch_elems(m, w), dtype=panel.dtype)
    deferred = status is not None
    if not deferred:
        status = xp.empty((), dtype=np.int32)
    native.panel_cholqr2(native.DTYPES[panel.dtype.name], m, w, panel.data.ptr, panel.strides[0] // item,
                         v.data.ptr, out.data.ptr, scratch.data.ptr, status.data.ptr, ORTHOGONALITY_LIMIT,
                         device=xp.cuda.Device().id, stream=xp.cuda.get_current_stream().ptr)
    if not deferred and int(status) != 0:
        return None
    return v, out[2 * w:3 * w], out[3 * w:4 * w], out[4 * w]


def _factors(xp, native, gram, q1_top, l1):
    """The w × w part (native/solvers/panel_factors.h): [V₁; K; T; R_h; tau] ((4w + 1) × w), or
    None when CholeskyQR2 is not to be trusted. On the GPU one kernel; its status, read back, is
    the panel's one wait for the device."""
    w = gram.shape[0]
    out = xp.empty((4 * w + 1, w), dtype=gram.dtype)
    scratch = xp.empty(native.panel_factors_scratch_elems(w), dtype=gram.dtype)
    status = xp.zeros((), dtype=np.int32)     # the call leaves it 0 where the factors were made
    pointers = [_pointer(x) for x in (gram, q1_top, l1, out, scratch, status)]
    if is_numpy(xp):
        native.panel_factors(native.DTYPES[gram.dtype.name], w, *pointers, ORTHOGONALITY_LIMIT)
    else:
        native.panel_factors(native.DTYPES[gram.dtype.name], w, *pointers, ORTHOGONALITY_LIMIT,
                             device=xp.cuda.Device().id, stream=xp.cuda.get_current_stream().ptr)
    return out if int(status) == 0 else None


def _pointer(x):
    return x.ctypes.data if isinstance(x, np.ndarray) else x.data.ptr


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
