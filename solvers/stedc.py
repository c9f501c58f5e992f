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

A subset (``select``, as ELPA's solve_tridi takes nev): every merge below the top forms all its
eigenvectors (the top merge needs every column of both halves' Q), the top merge finds every
root (they order the eigenvalues, and ẑ needs them all) but forms U's rows, and multiplies them
into Q, only for the roots that give wanted eigenpairs: Q[:, wanted] = diag(Q₁, Q₂) U[:, wanted].
That GEMM is three quarters of the whole solve's GEMM flops (n³/2 of 2n³/3 without deflation).
"""
import math

import numpy as np

from .backend.arrays import to_host
from .backend.lapack import secular_roots as lapack_secular_roots
from .phases import Phases

NEWTON_STEPS = 80   # bound; roots converge in ~10 steps (bisection at first, then quadratically)
ROOT_CHUNK = 2048   # roots per pass of the numpy secular solver (bounds its k × chunk temporaries)
MERGE_BLOCK = 4096  # roots a merge takes at a time for ẑ and U's rows: bounds its block × k
                    # temporaries (at k = n they were three n × n arrays at the top merge)


def stedc(xp, d, e, leaves, leaf_size=256, timings=None, select=None):
    """(w ascending, Z) with T = Z diag(w) Zᵀ for the tridiagonal with diagonal d (n) and
    off-diagonal e (n-1), float64 arrays of ``xp``. ``leaves([(d, e), ...])`` solves blocks of
    order <= leaf_size the same way on the host (numpy in, a list of numpy (w, Z) out); every
    leaf of the recursion is handed over in one call, so it may solve them concurrently.
    ``select`` = (first, last) (0-based, last excluded) keeps the eigenpairs first..last-1 of
    the ascending order only (w and Z's columns), and the top merge forms only those
    eigenvectors: the same eigenvalue bits as the whole solve, the same vectors to rounding.
    ``timings``, a dict, collects seconds per phase (leaf, deflate, roots, vectors, gemm), the
    stream synchronized around each."""
    d, e = to_host(d), to_host(e)
    n = d.shape[0]
    first, last = select or (0, n)
    scale = float(max(np.abs(d).max(), np.abs(e).max() if n > 1 else 0.0)) if n else 0.0
    if n <= leaf_size or scale == 0.0:
        (w, z), = leaves([(d, e)])
        return xp.asarray(w[first:last]), xp.asarray(z[:, first:last])
    # Scaled to norm ~1 (as dstedc does), so the tolerances below are absolute. Inside, the
    # eigenvectors are kept as rows (Qᵀ): every permutation is then one of whole rows.
    w, qt = stedc_rows(xp, d / scale, e / scale, leaves, leaf_size, Phases(xp, timings),
                       select)
    return w * scale, xp.ascontiguousarray(qt.T)


def stedc_rows(xp, d, e, leaves, leaf_size, phases, select=None):
    """(w ascending, Zᵀ) of the tridiagonal (d, e) (host float64, order > leaf_size, scaled to
    norm ~1): stedc without its scaling, the eigenvectors as rows (what stedc_distributed.py
    solves each rank's own block with); ``select`` as stedc's."""
    with phases("leaf"):
        solved = [(xp.asarray(w), xp.asarray(np.ascontiguousarray(z.T)))
                  for w, z in leaves(_leaf_blocks(d, e, leaf_size))]
    return _merge_tree(xp, d.shape[0], e, _taken(solved), leaf_size, phases, select)


def _taken(items):
    """The list's items in order, each let go by the list as it is taken (a merge can then free
    its halves once it has copied them)."""
    items.reverse()
    while items:
        yield items.pop()


def _halve(n, leaf_size):
    """The recursion's one split rule: the order of the first half, or 0 for a leaf."""
    return n // 2 if n > leaf_size else 0


def _leaf_blocks(d, e, leaf_size):
    """The (d, e) of every leaf of the recursion, left to right (host arrays)."""
    return torn_blocks(d, e, _leaf_starts(0, d.shape[0], leaf_size))


def _leaf_starts(lo, n, leaf_size):
    """Where each leaf after the first starts, for the block of order n at lo."""
    m = _halve(n, leaf_size)
    if not m:
        return []
    return _leaf_starts(lo, m, leaf_size) + [lo + m] + _leaf_starts(lo + m, n - m, leaf_size)


def torn_blocks(d, e, starts):
    """The (d, e) of the blocks that begin at ``starts`` (ascending, after 0) when T is torn
    there: each tear at m is T = diag(T₁, T₂) + β u uᵀ with β = e[m-1], so both sides'
    diagonals lose β at the tear (tears are independent: each changes its own two entries)."""
    d = np.array(d, dtype=np.float64)
    bounds = [0, *starts, d.shape[0]]
    for m in starts:
        d[m - 1] -= e[m - 1]
        d[m] -= e[m - 1]
    return [(d[lo:hi], e[lo:hi - 1]) for lo, hi in zip(bounds[:-1], bounds[1:])]


def _merge_tree(xp, n, e, solved, leaf_size, phases, select=None):
    """(w, Qᵀ) of the order-n block with off-diagonal e (host), merging up the recursion the
    solved leaves, an iterator of (w, Qᵀ) in _leaf_blocks' order; ``select`` (first, last)
    keeps those eigenpairs of this block only, formed by its merge alone: a merge needs every
    eigenvector of its halves, so the merges below form all of theirs."""
    m = _halve(n, leaf_size)
    if not m:
        w, qt = next(solved)
        return (w, qt) if select is None else (w[select[0]:select[1]], qt[select[0]:select[1]])
    # The halves are merge's arguments alone, so it can let them go once it has copied them.
    return merge(xp, *_merge_tree(xp, m, e[:m - 1], solved, leaf_size, phases),
                 *_merge_tree(xp, n - m, e[m:], solved, leaf_size, phases), float(e[m - 1]),
                 phases, select)


def merge(xp, w1, qt1, w2, qt2, beta, phases=None, select=None):
    """Eigen-decomposition of diag(Q₁ D₁ Q₁ᵀ, Q₂ D₂ Q₂ᵀ) + β u uᵀ (u = e_{n₁} + e_{n₁+1}), with
    the eigenvector matrices given and returned transposed (one eigenvector per row); only the
    eigenpairs ``select`` = (first, last) of the ascending order when given."""
    phases = phases or Phases(xp, None)
    z = xp.concatenate((qt1[:, -1], qt2[:, 0]))
    state = merge_prepare(xp, w1, qt1, w2, qt2, beta, z, phases)
    del qt1, qt2               # copied into state.qt
    with phases("roots"):
        origin, tau = secular_roots(xp, state.dk, state.zk, state.rho)
    return merge_finish(xp, state, origin, tau, phases, MERGE_BLOCK, select=select)


class MergeState:
    """A merge after deflation: what its secular roots are found for (dk, zk, rho: the kept
    poles, ascending, their z and the weight) and what merge_finish turns into eigenvectors."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    @property
    def k(self):
        return self.keep.size


def merge_prepare(xp, w1, qt1, w2, qt2, beta, z, phases):
    """Poles, z and deflation of a merge; qt1 (n₁ × c₁) and qt2 (n₂ × c₂) hold the components
    of the halves' eigenvectors (one per row) that the caller keeps: all of them (c₁ = n₁,
    c₂ = n₂), or some (stedc_distributed.py); z = (Q₁'s last row, Q₂'s first) is given,
    since a caller keeping only some components may not hold them."""
    n1, n2 = w1.shape[0], w2.shape[0]
    n, c1 = n1 + n2, qt1.shape[1]
    poles = xp.concatenate((w1, w2))
    flip = beta < 0            # D + ρ z zᵀ with ρ < 0 is −((−D) + |ρ| z zᵀ)
    if flip:
        poles = -poles
    znorm2 = float((z * z).sum())     # not BLAS's dot: the same sum on every rank
    rho = abs(beta) * znorm2
    z = z / math.sqrt(znorm2)
    order = xp.argsort(poles)
    poles, z = poles[order], z[order]
    # Qᵀ = diag(Q₁, Q₂)ᵀ with its rows in the poles' sorted order, written in place.
    place = xp.empty(n, dtype=order.dtype)
    place[order] = xp.arange(n, dtype=order.dtype)
    qt = xp.zeros((n, c1 + qt2.shape[1]), dtype=qt1.dtype)
    for rows, cols, half in ((place[:n1], slice(0, c1), qt1), (place[n1:], slice(c1, None), qt2)):
        if half.shape[1]:                  # a caller may hold none of a half's components
            qt[rows, cols] = half
    # Where each eigenvector may be non-zero: Q₁'s in the first n₁ entries, Q₂'s in the rest;
    # a rotation mixing one of each makes both full. The GEMM uses only those blocks.
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
    kk = xp.asarray(keep)
    return MergeState(poles=poles, qt=qt, c1=c1, top=top, bottom=bottom, keep=keep, kk=kk,
                      dk=poles[kk], zk=z[kk], rho=rho, flip=flip)


def merged_eigenvalues(xp, state, origin, tau):
    """(w, position) of a prepared merge given its roots: the merged block's eigenvalues
    ascending, and the place in that order of each eigenpair as the poles order them (a
    deflated one's eigenvalue is its pole)."""
    lam, kk = state.poles.copy(), state.kk
    if state.k:
        lam[kk] = state.dk[origin] + tau
    if state.flip:
        lam = -lam
    order = xp.argsort(lam)
    position = xp.empty_like(order)
    position[order] = xp.arange(lam.shape[0], dtype=order.dtype)
    return lam[order], position


def wanted_roots(xp, state, position, select):
    """Which of a merge's k secular roots give the eigenpairs ``select`` = (first, last) of its
    ascending order (all when None): an index array into the roots, ascending."""
    if select is None:
        return xp.arange(state.k)
    placed = position[state.kk]
    return xp.flatnonzero((placed >= select[0]) & (placed < select[1]))


def merge_finish(xp, state, origin, tau, phases, block=None, zhat=None, norms=None,
                 select=None):
    """(w ascending, Qᵀ's kept components) of a prepared merge, given its roots (origin, tau:
    all k of them). The eigenvectors are written over state.qt in their sorted places (the
    deflated ones moved, the new ones formed ``block`` at a time, default all k), so that
    neither the k × k matrix of the rank-one update's eigenvectors nor a second Qᵀ exists.
    ``select`` = (first, last) keeps the eigenpairs first..last-1 of the ascending order only:
    only the rows of U of the roots that give them (wanted_roots) are formed and multiplied,
    into a new (last - first) × components array; a wanted deflated eigenvector is its row of
    Qᵀ as it is. ``zhat`` (Löwner's ẑ) and ``norms`` (of U's rows, those of the wanted roots
    in their order) may be given, computed in shares by several callers
    (stedc_distributed.py); with norms, a caller holding one part of the components forms only
    the columns of U that part needs."""
    qt, keep, kk = state.qt, state.keep, state.kk
    state.qt = None
    n, k = state.poles.shape[0], keep.size
    w, position = merged_eigenvalues(xp, state, origin, tau)
    first, last = select or (0, n)
    roots = wanted_roots(xp, state, position, select)
    # The GEMM's operands, gathered before their rows are overwritten: for each part of the
    # components, the kept eigenvectors that may be non-zero there (rows of Qᵀ).
    parts = [(slice(0, state.c1), state.top[keep]),
             (slice(state.c1, qt.shape[1]), state.bottom[keep])]
    parts = [(part, held.all(), xp.asarray(np.flatnonzero(held))) for part, held in parts
             if roots.size and part.stop > part.start]
    parts = [(part, None if whole else sel, qt[kk[sel], part]) for part, whole, sel in parts]
    deflated = xp.asarray(np.setdiff1d(np.arange(n), keep, assume_unique=True))
    out = qt
    if select is not None:   # the wanted rows only, in a new array (qt is an operand's source)
        out = xp.empty((last - first, qt.shape[1]), dtype=qt.dtype)
        deflated = deflated[(position[deflated] >= first) & (position[deflated] < last)]
    if qt.shape[1]:
        out[position[deflated] - first] = qt[deflated]   # eigenvalue = pole, vector = row of Qᵀ
    del qt
    if parts:
        block = block or k
        if zhat is None:
            with phases("vectors"):
                zhat = loewner_z(xp, state.dk, state.zk, state.rho, origin, tau, block)
        only = parts[0][1] if norms is not None and len(parts) == 1 else None
        target = position[kk[roots]] - first
        for start in range(0, roots.size, block):
            cols = slice(start, min(roots.size, start + block))
            chosen = roots[cols]
            with phases("vectors"):
                ut = _rank_one_rows(xp, state.dk, zhat, origin[chosen], tau[chosen],
                                    None if norms is None else norms[cols], only)
            with phases("gemm"):     # new eigenvectors: (Q[:, kept] U)ᵀ = Uᵀ Qᵀ[kept]
                for part, sel, rows in parts:
                    picked = ut if sel is None or only is not None else ut[:, sel]
                    out[target[cols], part] = picked @ rows
    return w[first:last], out


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


def _rank_one_rows(xp, d, zhat, origin, tau, norms=None, columns=None):
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
