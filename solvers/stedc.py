"""stedc: the symmetric tridiagonal eigenproblem by divide and conquer, on numpy or cupy.

The algorithm of LAPACK's dstedc (Cuppen 1981; eigenvectors by Gu and Eisenstat 1995), written
with whole-array operations so that on a GPU the work is a few large kernels and GEMMs:

  T = diag(T₁, T₂) + β u uᵀ,  u = e_m + e_{m+1}   (tear at the middle, T₁/T₂ diagonals less β)
  T₁ = Q₁ D₁ Q₁ᵀ, T₂ = Q₂ D₂ Q₂ᵀ                   (recursively; small blocks by ``leaves``)
  T = Q (D + ρ z zᵀ) Qᵀ,  z = Qᵀ u / ‖Qᵀ u‖,  ρ = β ‖Qᵀ u‖²,  Q = diag(Q₁, Q₂)

The rank-one update D + ρ z zᵀ is solved after deflation (components with negligible ρ zⱼ, and
pairs of nearly equal poles rotated into one, as dlaed2 does), by finding every root of the
secular equation 1 + ρ Σ zⱼ² / (dⱼ − λ) = 0 at once (safeguarded Newton inside the root's
bracket, each root measured from its nearer pole so that λ − dⱼ keeps full relative accuracy),
then recomputing z from the computed roots (Löwner's formula) so the eigenvectors
ẑᵢ / (dᵢ − λⱼ) are orthogonal to working precision. The new eigenvectors are one GEMM of Q with
that k × k matrix.

The splits are fixed (m = n // 2 down to order <= leaf_size), so every leaf block is known
before any merge: they are handed to the host solver in one batch (which may solve them
concurrently), and on a GPU each merge's roots are found by one kernel launch.
"""
import math
import time
from contextlib import contextmanager

import numpy as np

from .backend.arrays import synchronize, to_host

NEWTON_STEPS = 80   # bound; roots converge in ~10 steps (bisection at first, then quadratically)
ROOT_CHUNK = 2048   # roots per pass of the numpy secular solver (bounds its k × chunk temporaries)


def stedc(xp, d, e, leaves, leaf_size=256, timings=None):
    """(w ascending, Z) with T = Z diag(w) Zᵀ for the tridiagonal with diagonal d (n) and
    off-diagonal e (n-1), float64 arrays of ``xp``. ``leaves([(d, e), ...])`` solves blocks of
    order <= leaf_size the same way on the host (numpy in, a list of numpy (w, Z) out); every
    leaf of the recursion is handed over in one call, so it may solve them concurrently.
    ``timings``, a dict, collects seconds per phase (leaf, deflate, roots, vectors, gemm), the
    stream synchronized around each."""
    d, e = to_host(d), to_host(e)
    n = d.shape[0]
    scale = float(max(np.abs(d).max(), np.abs(e).max() if n > 1 else 0.0)) if n else 0.0
    if n <= leaf_size or scale == 0.0:
        (w, z), = leaves([(d, e)])
        return xp.asarray(w), xp.asarray(z)
    # Scaled to norm ~1 (as dstedc does), so the tolerances below are absolute. Inside, the
    # eigenvectors are kept as rows (Qᵀ): every permutation is then one of whole rows.
    d, e = d / scale, e / scale
    phases = _Phases(xp, timings)
    with phases("leaf"):
        solved = [(xp.asarray(w), xp.asarray(np.ascontiguousarray(z.T)))
                  for w, z in leaves(_leaf_blocks(d, e, leaf_size))]
    w, qt = _merge_tree(xp, n, e, iter(solved), leaf_size, phases)
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


def _halve(n, leaf_size):
    """The recursion's one split rule: the order of the first half, or 0 for a leaf."""
    return n // 2 if n > leaf_size else 0


def _leaf_blocks(d, e, leaf_size):
    """The (d, e) of every leaf of the recursion, left to right (host arrays). Each split is
    T = diag(T₁, T₂) + β u uᵀ, so both halves' diagonals lose β at the tear."""
    m = _halve(d.shape[0], leaf_size)
    if not m:
        return [(d, e)]
    beta = e[m - 1]
    d1, d2 = d[:m].copy(), d[m:].copy()
    d1[-1] -= beta
    d2[0] -= beta
    return _leaf_blocks(d1, e[:m - 1], leaf_size) + _leaf_blocks(d2, e[m:], leaf_size)


def _merge_tree(xp, n, e, solved, leaf_size, phases):
    """(w, Qᵀ) of the order-n block with off-diagonal e (host), merging up the recursion the
    solved leaves, an iterator of (w, Qᵀ) in _leaf_blocks' order."""
    m = _halve(n, leaf_size)
    if not m:
        return next(solved)
    w1, qt1 = _merge_tree(xp, m, e[:m - 1], solved, leaf_size, phases)
    w2, qt2 = _merge_tree(xp, n - m, e[m:], solved, leaf_size, phases)
    return merge(xp, w1, qt1, w2, qt2, float(e[m - 1]), phases)


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
    if xp is not np:
        return origin, _device_newton(xp, d, zz, rho, origin, lo, hi, tau)
    for start in range(0, k, ROOT_CHUNK):
        sl = slice(start, min(k, start + ROOT_CHUNK))
        tau[sl] = _newton(d, zz, rho, origin[sl], lo[sl], hi[sl], tau[sl])
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


# Compiled without FMA contraction: every operation is then rounded as in the numpy
# reference, and the two paths differ only in the order in which the pole sums are added.
_SECULAR_SOURCE = r"""
// One warp per root (a thread per root leaves most of the GPU idle even at k = 16384): lanes
// stride over the k poles (coalesced loads), then a butterfly adds the partial sums in a fixed
// order. Addition commutes, so every lane ends with the same bits: the warp takes each branch
// as one, and a run repeats the previous one exactly.
__device__ void secular_sums(const double* d, const double* zz, long long k, double rho,
                             double pole, double t, double& f, double& df, double& bound) {
  double s = 0, s2 = 0, sa = 0;
  for (long long j = threadIdx.x % 32; j < k; j += 32) {
    const double delta = (d[j] - pole) - t;   // measured from the root's own pole: no cancellation
    const double term = zz[j] / delta;
    s += term;
    s2 += term / delta;
    sa += fabs(term);
  }
  for (int lanes = 16; lanes > 0; lanes /= 2) {
    s += __shfl_xor_sync(0xffffffffu, s, lanes);
    s2 += __shfl_xor_sync(0xffffffffu, s2, lanes);
    sa += __shfl_xor_sync(0xffffffffu, sa, lanes);
  }
  f = 1 + rho * s;
  df = rho * s2;
  bound = 1 + rho * sa;
}

__device__ long long warp_root() { return (blockIdx.x * (long long)blockDim.x + threadIdx.x) / 32; }

// f, f', bound at each root's tau, as _secular_with_slope on numpy.
extern "C" __global__ void secular(const double* d, const double* zz, double rho,
                                   const long long* origin, const double* tau, long long k,
                                   long long nroots, double* f, double* df, double* bound) {
  const long long i = warp_root();
  if (i >= nroots) return;   // whole warps only: the shuffles need all 32 lanes
  double fi, dfi, bi;
  secular_sums(d, zz, k, rho, d[origin[i]], tau[i], fi, dfi, bi);
  if (threadIdx.x % 32 == 0) { f[i] = fi; df[i] = dfi; bound[i] = bi; }
}

// _newton, each root to its own convergence: the same model step, bisection outside the
// bracket, convergence tests and bound on the steps (the numpy reference steps a whole chunk
// until all of it is done, which moves converged roots at rounding level only).
extern "C" __global__ void secular_roots(const double* d, const double* zz, double rho,
                                         const long long* origin, const double* lo_start,
                                         const double* hi_start, double* tau, long long k,
                                         long long nroots, int steps) {
  const long long i = warp_root();
  if (i >= nroots) return;
  const double eps = 2.220446049250313e-16;   // 2^-52, numpy's finfo(float64).eps
  const double pole = d[origin[i]];
  double lo = lo_start[i], hi = hi_start[i], t = tau[i];
  for (int step = 0; step < steps; ++step) {
    double f, df, bound;
    secular_sums(d, zz, k, rho, pole, t, f, df, bound);
    if (f < 0) lo = t;
    if (f >= 0) hi = t;   // not "else": a NaN f moves neither end, as in numpy
    const double s = df * t * t, c = f + df * t;
    const double model = s / (c == 0 ? 1.0 : c);
    const bool at_root = fabs(f) <= 4 * eps * bound;
    const double next = at_root ? t : (model > lo && model < hi) ? model : (lo + hi) / 2;
    const bool done = at_root || fabs(next - t) <= 2 * eps * fabs(next) ||
                      hi - lo <= 2 * eps * fmax(fabs(lo), fabs(hi));
    t = next;
    if (done) break;
  }
  if (threadIdx.x % 32 == 0) tau[i] = t;
}
"""
_BLOCK = 256   # threads per block: 8 roots
_KERNELS = {}


def _launch(xp, name, nroots, *args):
    """Run kernel ``name`` of _SECULAR_SOURCE (compiled on first use) with a warp per root."""
    kernel = _KERNELS.get(name)
    if kernel is None:
        kernel = _KERNELS[name] = xp.RawKernel(_SECULAR_SOURCE, name, options=("--fmad=false",))
    roots_per_block = _BLOCK // 32
    kernel(((nroots + roots_per_block - 1) // roots_per_block,), (_BLOCK,), args)


def _device_secular(xp, d, zz, rho, origin, tau):
    """The same sums as _secular_with_slope, no k × roots arrays."""
    m = tau.shape[0]
    f, df, bound = (xp.empty(m, dtype=xp.float64) for _ in range(3))
    _launch(xp, "secular", m, d, zz, xp.float64(rho), xp.ascontiguousarray(origin, dtype=xp.int64),
            xp.ascontiguousarray(tau), np.int64(d.shape[0]), np.int64(m), f, df, bound)
    return f, df, bound


def _newton(d, zz, rho, origin, lo, hi, tau):
    """Bracketed root iteration on the secular function (increasing across each bracket), on
    numpy: the reference for _device_newton.

    Plain Newton converges only linearly when the root hugs its pole (a small z at the origin
    pole: the function is a hyperbola there), so each step instead solves the model
    c + s / (0 − τ), the origin pole's own term with c, s fitted to f and f' at τ; it is exact
    for a lone pole and quadratically convergent otherwise. A step leaving the bracket is
    replaced by bisection."""
    eps = np.finfo(np.float64).eps
    lo, hi = lo.copy(), hi.copy()
    for _ in range(NEWTON_STEPS):
        f, df, bound = _secular_with_slope(np, d, zz, rho, origin, tau)
        lo = np.where(f < 0, tau, lo)
        hi = np.where(f >= 0, tau, hi)
        s = df * tau * tau
        c = f + df * tau
        step = s / np.where(c == 0, 1.0, c)
        inside = (step > lo) & (step < hi)
        new = np.where(inside, step, (lo + hi) / 2)
        # Converged: f is at its rounding level (then tau is kept), the step or the bracket is
        # at tau's own rounding level.
        at_root = np.abs(f) <= 4 * eps * bound
        new = np.where(at_root, tau, new)
        done = at_root | (np.abs(new - tau) <= 2 * eps * np.abs(new)) | \
            (hi - lo <= 2 * eps * np.maximum(np.abs(lo), np.abs(hi)))
        tau = new
        if bool(done.all()):
            break
    return tau


def _device_newton(xp, d, zz, rho, origin, lo, hi, tau):
    """_newton in one kernel launch, every root iterating on the device by itself (no host
    round trip per step). Returns tau, the starting values overwritten."""
    tau = xp.ascontiguousarray(tau)
    m = tau.shape[0]
    _launch(xp, "secular_roots", m, d, zz, xp.float64(rho),
            xp.ascontiguousarray(origin, dtype=xp.int64), xp.ascontiguousarray(lo),
            xp.ascontiguousarray(hi), tau, np.int64(d.shape[0]), np.int64(m), np.int32(NEWTON_STEPS))
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

