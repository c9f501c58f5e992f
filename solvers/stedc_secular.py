"""The secular equation of one merge of divide and conquer (stedc_merge.py) and the
eigenvectors of its rank-one update, as LAPACK's dlaed4 and dlaed3 do them.

Every root of 1 + ρ Σ zⱼ² / (dⱼ − λ) = 0 at once: by dlaed4 on numpy (backend.lapack), by a
safeguarded Newton inside each root's bracket otherwise, each root measured from its nearer pole
so that λ − dⱼ keeps full relative accuracy: the numpy reference (_newton) and, in a GPU run,
its kernels (a warp a root, compiled on first use from the source below, without FMA
contraction so that each operation rounds as numpy's). Then z recomputed from the roots
(Löwner's formula), so that the eigenvectors ẑᵢ / (dᵢ − λⱼ) of D + ρ ẑ ẑᵀ are orthogonal to
working precision.
"""
import numpy as np

from .backend.lapack import secular_roots as lapack_secular_roots

NEWTON_STEPS = 80   # bound; roots converge in ~10 steps (bisection at first, then quadratically)
ROOT_CHUNK = 2048   # roots per pass of the numpy secular solver (bounds its k × chunk temporaries)


def secular_roots(xp, d, z, rho, first=0, last=None):
    """Roots ``first``..``last``-1 (default all) of the secular equation, as (origin, tau): by
    LAPACK's dlaed4 on numpy (k ≥ 3; the fast host solver), by _secular_roots' kernel on cupy.
    A root dlaed4 does not converge on is found by _secular_roots' safeguarded Newton instead."""
    if xp is np and d.shape[0] >= 3:
        origin, tau, unconverged = lapack_secular_roots(d, z, rho, first,
                                                        d.shape[0] if last is None else last)
        for i in unconverged:
            (origin[i - first],), (tau[i - first],) = _secular_roots(np, d, z, rho, i, i + 1)
        return origin, tau
    return _secular_roots(xp, d, z, rho, first, last)


def _secular_roots(xp, d, z, rho, first=0, last=None):
    """Roots λᵢ = d[origin[i]] + tau[i] of 1 + ρ Σ zⱼ²/(dⱼ − λ) (d ascending, ρ > 0, no zⱼ = 0):
    λᵢ in (dᵢ, dᵢ₊₁), the last in (d_{k-1}, d_{k-1} + ρ‖z‖²); each measured from its nearer pole.
    Only roots ``first``..``last``-1 (default all k) are found; arrays of that length."""
    k = d.shape[0]
    last = k if last is None else last
    if last <= first:
        return xp.zeros(0, dtype=xp.int64), xp.zeros(0, dtype=d.dtype)
    zz = z * z
    origin = xp.arange(first, last)
    inner = max(min(last, k - 1) - first, 0)   # roots with a pole on their right
    gap = xp.empty(last - first, dtype=d.dtype)
    gap[:inner] = d[first + 1:first + 1 + inner] - d[first:first + inner]
    if last == k:
        gap[-1] = rho * float(zz.sum())
    # Which pole is nearer: the sign of the secular function half-way across the gap.
    half = gap / 2
    right = xp.zeros(last - first, dtype=bool)
    if inner:
        right[:inner] = _secular_with_slope(xp, d, zz, rho, origin[:inner], half[:inner])[0] < 0
    origin = xp.where(right, origin + 1, origin)
    lo = xp.where(right, -half, xp.zeros_like(half))
    hi = xp.where(right, xp.zeros_like(half), xp.where(origin == k - 1, gap, half))
    tau = (lo + hi) / 2
    if xp is not np:
        return origin, _device_newton(xp, d, zz, rho, origin, lo, hi, tau)
    for start in range(0, last - first, ROOT_CHUNK):
        sl = slice(start, min(last - first, start + ROOT_CHUNK))
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


def loewner_z(xp, d, z, rho, origin, tau, block, first=0, last=None):
    """ẑ recomputed from the roots (Löwner), so that the eigenvectors ẑᵢ / (dᵢ − λⱼ) of
    D + ρ ẑ ẑᵀ are orthogonal to working precision: ẑᵢ² = Π_j (λⱼ − dᵢ) / (ρ Π_{j≠i} (dⱼ − dᵢ)),
    sign of zᵢ; for i in first..last-1 (default all), the product taken over ``block`` roots
    at a time (block × (last - first) temporaries)."""
    k = d.shape[0]
    last = k if last is None else last
    poles = slice(first, last)
    square = xp.ones(last - first, dtype=d.dtype)
    for start in range(0, k, block):
        rows = slice(start, min(k, start + block))
        # [j, i] = λⱼ − dᵢ, exact to the rounding of the pole differences, over dⱼ − dᵢ.
        ratio = d[origin[rows]][:, None] - d[None, poles]
        ratio += tau[rows][:, None]
        d_minus_d = d[rows][:, None] - d[None, poles]
        same = xp.arange(max(rows.start, first), min(rows.stop, last))   # j = i: ρ instead
        if same.size:
            d_minus_d[same - rows.start, same - first] = rho
        ratio /= d_minus_d
        square *= xp.prod(ratio, axis=0)
    return xp.sqrt(xp.abs(square)) * xp.where(z[poles] < 0, -1.0, 1.0)


def row_norms(xp, d, zhat, origin, tau):
    """‖(ẑᵢ / (dᵢ − λⱼ))ᵢ‖ for the given roots λⱼ: what U's rows are divided by."""
    ut = _unnormalized_rows(xp, d[origin], d, zhat, tau)
    return xp.sqrt((ut * ut).sum(axis=1))


def rank_one_rows(xp, d, zhat, origin, tau, norms=None, columns=None):
    """Orthonormal eigenvectors of D + ρ ẑ ẑᵀ for the given roots, one per row (len(tau) × k):
    [j, i] = ẑᵢ / (dᵢ − λⱼ), divided by ``norms`` (default: each row's own norm); only the
    entries i in ``columns`` (an index array) when given, which needs the norms."""
    if columns is None:
        ut = _unnormalized_rows(xp, d[origin], d, zhat, tau)
        if norms is None:
            norms = xp.sqrt((ut * ut).sum(axis=1))
    else:
        ut = _unnormalized_rows(xp, d[origin], d[columns], zhat[columns], tau)
    ut /= norms[:, None]
    return ut


def _unnormalized_rows(xp, pole_of_root, d, zhat, tau):
    """[j, i] = ẑᵢ / (dᵢ − λⱼ), λⱼ − dᵢ taken as (pole_of_root[j] − dᵢ) + tau[j]: from the
    root's own pole, so that it keeps full relative accuracy."""
    ut = pole_of_root[:, None] - d[None, :]
    ut += tau[:, None]
    xp.divide(-zhat[None, :], ut, out=ut)
    return ut
