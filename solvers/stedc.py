"""stedc: the symmetric tridiagonal eigenproblem by divide and conquer, on numpy or cupy.

The algorithm of LAPACK's dstedc (Cuppen 1981; eigenvectors by Gu and Eisenstat 1995), written
with whole-array operations so that on a GPU the work is a few large kernels and GEMMs:

  T = diag(T₁, T₂) + β u uᵀ,  u = e_m + e_{m+1}   (tear at the middle, T₁/T₂ diagonals less β)
  T₁ = Q₁ D₁ Q₁ᵀ, T₂ = Q₂ D₂ Q₂ᵀ                   (recursively; small blocks by ``leaf``)
  T = Q (D + ρ z zᵀ) Qᵀ,  z = Qᵀ u / ‖Qᵀ u‖,  ρ = β ‖Qᵀ u‖²,  Q = diag(Q₁, Q₂)

The rank-one update D + ρ z zᵀ is solved after deflation (components with negligible ρ zⱼ, and
pairs of nearly equal poles rotated into one, as dlaed2 does), by finding every root of the
secular equation 1 + ρ Σ zⱼ² / (dⱼ − λ) = 0 at once (safeguarded Newton inside the root's
bracket, each root measured from its nearer pole so that λ − dⱼ keeps full relative accuracy),
then recomputing z from the computed roots (Löwner's formula) so the eigenvectors
ẑᵢ / (dᵢ − λⱼ) are orthogonal to working precision. The new eigenvectors are one GEMM of Q with
that k × k matrix.
"""
import math
import time
from contextlib import contextmanager

import numpy as np

from .backend.arrays import synchronize, to_host

NEWTON_STEPS = 80   # bound; roots converge in ~10 steps (bisection at first, then quadratically)
ROOT_CHUNK = 2048   # roots per pass of the secular solver (bounds the k × chunk temporaries)


def stedc(xp, d, e, leaf, leaf_size=256, timings=None):
    """(w ascending, Z) with T = Z diag(w) Zᵀ for the tridiagonal with diagonal d (n) and
    off-diagonal e (n-1), float64 arrays of ``xp``. ``leaf(d, e)`` solves blocks of order
    <= leaf_size the same way (returning xp arrays). ``timings``, a dict, collects seconds per
    phase (leaf, deflate, roots, vectors, gemm), the stream synchronized around each."""
    n = d.shape[0]
    scale = float(max(xp.abs(d).max(), xp.abs(e).max() if n > 1 else 0.0)) if n else 0.0
    if n <= leaf_size or scale == 0.0:
        return leaf(d, e)
    # Scaled to norm ~1 (as dstedc does), so the tolerances below are absolute. Inside, the
    # eigenvectors are kept as rows (Qᵀ): every permutation is then one of whole rows.
    w, qt = _solve(xp, d / scale, e / scale, leaf, leaf_size, _Phases(xp, timings))
    return w * scale, xp.ascontiguousarray(qt.T)


class _Phases:
    """``with phases("name"):`` adds the block's wall time to timings["name"] (no-op without)."""

    def __init__(self, xp, timings):
        self.xp, self.timings = xp, timings

    @contextmanager
    def __call__(self, name):
        if self.timings is None:
            yield
            return
        synchronize(self.xp)
        start = time.perf_counter()
        yield
        synchronize(self.xp)
        self.timings[name] = self.timings.get(name, 0.0) + time.perf_counter() - start


def _solve(xp, d, e, leaf, leaf_size, phases):
    n = d.shape[0]
    if n <= leaf_size:
        with phases("leaf"):
            w, z = leaf(d, e)
            return w, xp.ascontiguousarray(z.T)
    m = n // 2
    beta = e[m - 1]
    d1, d2 = d[:m].copy(), d[m:].copy()
    d1[-1] -= beta
    d2[0] -= beta
    w1, qt1 = _solve(xp, d1, e[:m - 1], leaf, leaf_size, phases)
    w2, qt2 = _solve(xp, d2, e[m:], leaf, leaf_size, phases)
    return merge(xp, w1, qt1, w2, qt2, float(beta), phases)


def merge(xp, w1, qt1, w2, qt2, beta, phases=None):
    """Eigen-decomposition of diag(Q₁ D₁ Q₁ᵀ, Q₂ D₂ Q₂ᵀ) + β u uᵀ (u = e_{n₁} + e_{n₁+1}), with
    the eigenvector matrices given and returned transposed (one eigenvector per row)."""
    phases = phases or _Phases(xp, None)
    n1, n2 = w1.shape[0], w2.shape[0]
    n = n1 + n2
    poles = xp.concatenate((w1, w2))
    z = xp.concatenate((qt1[:, -1], qt2[:, 0]))
    flip = beta < 0            # D + ρ z zᵀ with ρ < 0 is −((−D) + |ρ| z zᵀ)
    if flip:
        poles = -poles
    znorm2 = float(z @ z)
    rho = abs(beta) * znorm2
    z = z / math.sqrt(znorm2)
    order = xp.argsort(poles)
    poles, z = poles[order], z[order]
    # Qᵀ = diag(Q₁, Q₂)ᵀ with its rows in the poles' sorted order, written in place.
    place = xp.empty(n, dtype=order.dtype)
    place[order] = xp.arange(n, dtype=order.dtype)
    qt = xp.zeros((n, n), dtype=qt1.dtype)
    qt[place[:n1], :n1] = qt1
    qt[place[n1:], n1:] = qt2
    # Where each eigenvector may be non-zero: Q₁'s in the first n₁ entries, Q₂'s in the rest;
    # a rotation mixing one of each makes both full. The GEMM below uses only those blocks.
    top = to_host(order) < n1
    bottom = ~top

    with phases("deflate"):
        keep, rotations = _deflate(xp, poles, z, rho)
        for i, j, c, s in rotations:      # dlaed2's Givens rotations of nearly equal poles
            qi, qj = qt[i].copy(), qt[j].copy()
            qt[i] = c * qi + s * qj
            qt[j] = c * qj - s * qi
            top[i] = top[j] = top[i] | top[j]
            bottom[i] = bottom[j] = bottom[i] | bottom[j]
    lam = poles.copy()                # deflated: eigenvalue = pole, eigenvector = row of Qᵀ
    if keep.size:
        kk = xp.asarray(keep)
        dk, zk = poles[kk], z[kk]
        with phases("roots"):
            origin, tau = _secular_roots(xp, dk, zk, rho)
        with phases("vectors"):
            u = _rank_one_vectors(xp, dk, zk, rho, origin, tau)
        lam[kk] = dk[origin] + tau
        with phases("gemm"):         # new eigenvectors: (Q[:, kept] U)ᵀ = Uᵀ Qᵀ[kept]
            new = xp.empty((keep.size, n), dtype=qt.dtype)
            for part, held in ((slice(0, n1), top[keep]), (slice(n1, n), bottom[keep])):
                sel = xp.asarray(np.flatnonzero(held))
                new[:, part] = u[sel].T @ qt[kk[sel], part]
            qt[kk] = new
    if flip:
        lam = -lam
    order = xp.argsort(lam)
    return lam[order], qt[order]


def _deflate(xp, poles, z, rho):
    """Indices of the non-deflated components and the rotations that deflate near-equal poles
    (dlaed2). Modifies ``poles`` and ``z`` in place as those rotations do."""
    eps = np.finfo(np.float64).eps
    d_host, z_host = to_host(poles), to_host(z)   # one copy each: the decisions are made here
    tol = 8.0 * eps * max(float(np.abs(d_host).max()), float(np.abs(z_host).max()))
    alive = np.flatnonzero(rho * np.abs(z_host) > tol)
    if alive.size < 2:
        return alive, []
    d_h, z_h = d_host[alive], z_host[alive]
    # The rotation test of each consecutive pair; without any candidate nothing rotates
    # (the usual case), so the sequential pass below runs only when some pair is close.
    r = np.hypot(z_h[1:], z_h[:-1])
    close = np.abs((d_h[1:] - d_h[:-1]) * (z_h[1:] / r) * (z_h[:-1] / r)) <= tol
    if not close.any():
        return alive, []
    d_all, z_all = d_host.tolist(), z_host.tolist()
    keep, rotations = [], []
    prev = int(alive[0])
    for j in alive[1:].tolist():
        s, c = z_all[prev], z_all[j]
        tau = math.hypot(c, s)
        c, s = c / tau, -s / tau
        if abs((d_all[j] - d_all[prev]) * c * s) <= tol:
            z_all[j], z_all[prev] = tau, 0.0
            rotations.append((prev, j, c, s))
            d_prev = d_all[prev] * c * c + d_all[j] * s * s
            d_all[j] = d_all[prev] * s * s + d_all[j] * c * c
            d_all[prev] = d_prev
        else:
            keep.append(prev)
        prev = j
    keep.append(prev)
    poles[...] = xp.asarray(np.array(d_all))
    z[...] = xp.asarray(np.array(z_all))
    return np.array(keep, dtype=np.int64), rotations


def _secular_roots(xp, d, z, rho):
    """Roots λᵢ = d[origin[i]] + tau[i] of 1 + ρ Σ zⱼ²/(dⱼ − λ) (d ascending, ρ > 0, no zⱼ = 0):
    λᵢ in (dᵢ, dᵢ₊₁), the last in (d_{k-1}, d_{k-1} + ρ‖z‖²); each measured from its nearer pole."""
    k = d.shape[0]
    zz = z * z
    origin = xp.arange(k)
    gap = xp.empty(k, dtype=d.dtype)
    gap[:-1] = d[1:] - d[:-1]
    gap[-1] = rho * float(zz.sum())
    # Which pole is nearer: the sign of the secular function half-way across the gap.
    half = gap / 2
    right = xp.zeros(k, dtype=bool)
    if k > 1:
        right[:-1] = _secular_with_slope(xp, d, zz, rho, origin[:-1], half[:-1])[0] < 0
    origin = xp.where(right, origin + 1, origin)
    lo = xp.where(right, -half, xp.zeros_like(half))
    hi = xp.where(right, xp.zeros_like(half), xp.where(origin == k - 1, gap, half))
    tau = (lo + hi) / 2
    chunk = ROOT_CHUNK if xp is np else k     # the device kernel needs no k × chunk temporaries
    for start in range(0, k, chunk):
        sl = slice(start, min(k, start + chunk))
        tau[sl] = _newton(xp, d, zz, rho, origin[sl], lo[sl], hi[sl], tau[sl])
    return origin, tau


def _secular_with_slope(xp, d, zz, rho, origin, tau):
    """(f, f', bound): the secular function, its derivative, and 1 + ρ Σ |terms|, the scale of
    f's rounding error (dlaed4's erretm), at each root's tau."""
    if xp is not np:
        return _device_secular(xp, d, zz, rho, origin, tau)
    delta = d[None, :] - d[origin][:, None] - tau[:, None]
    terms = zz[None, :] / delta
    return (1 + rho * terms.sum(axis=1), rho * (terms / delta).sum(axis=1),
            1 + rho * np.abs(terms).sum(axis=1))


_SECULAR_SOURCE = r"""
extern "C" __global__ void secular(const double* d, const double* zz, double rho, const long long* origin,
                                   const double* tau, long long k, long long nroots,
                                   double* f, double* df, double* bound) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= nroots) return;
  const double o = d[origin[i]], t = tau[i];
  double s = 0, s2 = 0, sa = 0;
  for (long long j = 0; j < k; ++j) {   // every thread reads d, zz in the same order: broadcasts
    const double delta = (d[j] - o) - t;
    const double term = zz[j] / delta;
    s += term;
    s2 += term / delta;
    sa += fabs(term);
  }
  f[i] = 1 + rho * s;
  df[i] = rho * s2;
  bound[i] = 1 + rho * sa;
}
"""
_KERNELS = {}


def _device_secular(xp, d, zz, rho, origin, tau):
    """The same sums as _secular_with_slope, one GPU thread per root, no k × roots arrays."""
    kernel = _KERNELS.get("secular")
    if kernel is None:
        kernel = _KERNELS["secular"] = xp.RawKernel(_SECULAR_SOURCE, "secular")
    m = tau.shape[0]
    f, df, bound = (xp.empty(m, dtype=xp.float64) for _ in range(3))
    kernel(((m + 127) // 128,), (128,), (d, zz, xp.float64(rho), xp.ascontiguousarray(origin, dtype=xp.int64),
                                        xp.ascontiguousarray(tau), np.int64(d.shape[0]), np.int64(m), f, df, bound))
    return f, df, bound


def _newton(xp, d, zz, rho, origin, lo, hi, tau):
    """Bracketed root iteration on the secular function (increasing across each bracket).

    Plain Newton converges only linearly when the root hugs its pole (a small z at the origin
    pole: the function is a hyperbola there), so each step instead solves the model
    c + s / (0 − τ), the origin pole's own term with c, s fitted to f and f' at τ; it is exact
    for a lone pole and quadratically convergent otherwise. A step leaving the bracket is
    replaced by bisection."""
    eps = np.finfo(np.float64).eps
    lo, hi = lo.copy(), hi.copy()
    for _ in range(NEWTON_STEPS):
        f, df, bound = _secular_with_slope(xp, d, zz, rho, origin, tau)
        lo = xp.where(f < 0, tau, lo)
        hi = xp.where(f >= 0, tau, hi)
        s = df * tau * tau
        c = f + df * tau
        step = s / xp.where(c == 0, 1.0, c)
        inside = (step > lo) & (step < hi)
        new = xp.where(inside, step, (lo + hi) / 2)
        # Converged: f is at its rounding level (then tau is kept), the step or the bracket is
        # at tau's own rounding level.
        at_root = xp.abs(f) <= 4 * eps * bound
        new = xp.where(at_root, tau, new)
        done = at_root | (xp.abs(new - tau) <= 2 * eps * xp.abs(new)) | \
            (hi - lo <= 2 * eps * xp.maximum(xp.abs(lo), xp.abs(hi)))
        tau = new
        if bool(done.all()):
            break
    return tau


def _rank_one_vectors(xp, d, z, rho, origin, tau):
    """Orthonormal eigenvectors of D + ρ ẑ ẑᵀ (columns, k × k), with ẑ recomputed from the
    roots (Löwner): ẑᵢ² = Π_j (λⱼ − dᵢ) / (ρ Π_{j≠i} (dⱼ − dᵢ)), sign of zᵢ."""
    k = d.shape[0]
    # lam_minus_d[j, i] = λⱼ − dᵢ, exact to the rounding of the pole differences.
    lam_minus_d = (d[origin][:, None] - d[None, :]) + tau[:, None]
    d_minus_d = d[:, None] - d[None, :]                        # [j, i] = dⱼ − dᵢ
    idx = xp.arange(k)
    d_minus_d[idx, idx] = rho
    ratio = lam_minus_d / d_minus_d
    zhat = xp.sqrt(xp.abs(xp.prod(ratio, axis=0))) * xp.where(z < 0, -1.0, 1.0)
    u = zhat[:, None] / (-lam_minus_d.T)                       # [i, j] = ẑᵢ / (dᵢ − λⱼ)
    return u / xp.sqrt((u * u).sum(axis=0))[None, :]

