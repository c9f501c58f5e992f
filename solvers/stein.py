"""The wanted eigenpairs of the tridiagonal T by multisection and inverse iteration: LAPACK's
dstebz and dstein, their steps written once for the host and the GPU (native/solvers/stein*),
on the GPU in a GPU run.

Why: a GPU run's other subset method, divide and conquer, computes every eigenvalue and every
merge below the top whatever k is (stevr.py). Here an eigenvalue is a chain of n
dependent steps per multisection pass (a warp each, its 32 lanes 32 points of the interval) and
an eigenvector a few chains of n steps (a thread each, dlagtf's pivoted LU of T - λI then
dlagts's solves), so k of them run side by side in about the time of one.

What replaces dstein's reorthogonalization: dstein orthogonalizes each vector against the others
of its cluster (eigenvalues closer than 10⁻³ ‖T‖₁) inside the iteration, which serializes the
cluster. Here every vector iterates alone from its own start vector, and a rank's group, cut from
the wanted set only at gaps of 10⁻³ ‖T‖₁ (as stemr.py's dstein fallback cuts), is orthonormalized
afterwards by two Cholesky QR passes (GEMMs). Inverse iteration from different start vectors
gives linearly independent vectors for distinct and for repeated eigenvalues alike, and mixing the
vectors of one cluster moves each residual by at most the cluster's width. Between the two lies
what independent iteration cannot resolve: eigenvalues a few ulps of ‖T‖ apart (closer than the
shifts' error), whose vectors all drift to the nearest one. A tight cluster (eigenvalues within
10³ ε ‖T‖₁ of each other) whose vectors come out poor (dstt21 ratio over REDO) is computed again
by LAPACK's dstebz + dstein for its indices, on the host; exactly repeated eigenvalues, whose
vectors are good, are not. Every result is checked — each iteration met dstein's stopping rule,
and LAPACK's test ratios of dstt21, ‖ZᵀZ - I‖₁ / (n ε) and ‖T Z - Z Λ‖₁ / (n ε ‖T‖₁), are at
most its tests' threshold of 30 — and a failure on any rank returns why, for the caller to take
divide and conquer instead.

Eigenvalues are bitwise the same on every rank (each rank bisects its share, then one zero-padded
sum: stebz.stebz). Work O(n k / P) per rank where the spectrum has such gaps to cut at; a
spectrum with none (a uniform one at large n) is one group, on one rank.
"""
import numpy as np

from .backend.arrays import cholesky_lower, cholesky_lower_whole, is_numpy, solve_triangular, to_host
from .backend.lapack import stein_vectors as dstebz_dstein
from .backend.threads import blas_threads_lent
from .distributed.columns import RankColumns
from .phases import Phases
from .stebz import lapack_bisect
from .stemr import group_bounds, norm1, stein_cuts, tridiagonal_product
from .kernels import kernels

BATCH_BYTES = 2 << 30   # work arrays of one batch of inverse iterations
WORK_BYTES = 49         # of them per element of a vector: a, 1/a, b, u2, l, y and the swap flag
FUDGE = 2.1             # dstebz's widening of the Gershgorin bounds
THRESHOLD = 30          # the checks' bound in units of n ε (LAPACK's test threshold, its ratios' unit)
TIGHT = 1e3             # eigenvalues closer than this many ε ‖T‖₁ form a tight cluster
TIGHT_MOST = 256        # the largest tight cluster given to dstein (its work is n g² a cluster)
REDO = 1.0              # a tight cluster with a vector's ratio over this goes to dstein (a bar below THRESHOLD)


def bisection_inputs(d, e):
    """(e², (lower, upper, pivmin, abstol)) for the kernels' multisection, as dstebz sets them up:
    an off-diagonal entry negligible next to its diagonal neighbours counts as zero (T splits
    there), pivmin is the underflow threshold times the largest e², the bounds are Gershgorin's
    widened by FUDGE ulps of ‖T‖ per order, and abstol is one ulp of ‖T‖."""
    n = d.shape[0]
    ulp, safmin = np.finfo(np.float64).eps, np.finfo(np.float64).tiny
    e2 = e * e
    e2[np.abs(d[1:] * d[:-1]) * ulp ** 2 + safmin > e2] = 0.0
    pivmin = safmin * max(1.0, float(e2.max(initial=0.0)))
    radius = np.zeros(n)
    radius[:-1] += np.sqrt(e2)
    radius[1:] += np.sqrt(e2)
    lower, upper = float((d - radius).min()), float((d + radius).max())
    tnorm = max(abs(lower), abs(upper))
    lower -= FUDGE * tnorm * ulp * n + FUDGE * 2 * pivmin
    upper += FUDGE * tnorm * ulp * n + FUDGE * pivmin
    return e2, (lower, upper, pivmin, ulp * tnorm)


def bisector(xp):
    """stebz.stebz's ``bisect`` for backend ``xp``: the kernels' multisection on the GPU for cupy;
    LAPACK's dstebz on the host for numpy, which bisects with one point per pass where the
    multisection's host build evaluates up to 32 (work that one core does not spread), so that
    build serves the host only as the device's reference."""
    return lapack_bisect if is_numpy(xp) else multisection(xp)


def multisection(xp):
    """``bisect(d, e, il, iu)``: eigenvalues il..iu (1-based) of (d, e) by the kernels'
    multisection, on the GPU for cupy (a warp each), else by their host build (bit for bit the
    device's results)."""
    native, why = kernels()
    if native is None:
        raise RuntimeError(f"stein needs solvers._kernels: {why}")

    def bisect(d, e, il, iu):
        count = iu - il + 1
        e2, (lower, upper, pivmin, abstol) = bisection_inputs(d, e)
        if is_numpy(xp):
            w = np.empty(count)
            with blas_threads_lent() as threads:
                native.stein_eigenvalues(d.ctypes.data, e2.ctypes.data, d.shape[0], lower, upper, pivmin, abstol,
                                         il, count, w.ctypes.data, threads=threads)
            return w
        dd, ee2, w = xp.asarray(d), xp.asarray(e2), xp.empty(count)
        native.stein_eigenvalues(dd.data.ptr, ee2.data.ptr, d.shape[0], lower, upper, pivmin, abstol, il, count,
                                 w.data.ptr, device=xp.cuda.Device().id, stream=xp.cuda.get_current_stream().ptr)
        return to_host(w)
    return bisect


def vectors(d, e, il, w, coll):
    """(RankColumns of this rank's group of eigenvectors, whole, on the run's backend, None) for
    the eigenvalues w (ascending, the same on every rank) of il.. (1-based) of (d, e) (float64
    host arrays), or (None, why) on every rank when a check failed on any."""
    n, k, grid, xp = d.shape[0], w.shape[0], coll.grid, coll.xp
    onenrm = norm1(d, e)
    bounds = group_bounds(stein_cuts(w, d, e), k, grid.size)
    start, stop = int(bounds[grid.rank]), int(bounds[grid.rank + 1])
    coll.note("vectors_this_rank", stop - start)
    coll.note("largest_group", int(np.diff(bounds).max()) if k else 0)
    mine, why, timings = xp.empty((n, 0)), None, {}
    if stop > start:
        phases = Phases(xp, timings)
        mine, why, figures, redone = _group(d, e, w[start:stop], il - 1 + start, onenrm, xp, phases)
        coll.note("stein_checks", figures)
        coll.note("tight_clusters_by_dstein", redone)
    for phase, seconds in timings.items():
        coll.note(f"stein_{phase}_s", seconds)
    if coll.any_flag(why is not None):
        return None, why or "a check failed on another rank"
    coll.note("vectors_by", "multisection + inverse iteration (dstebz + dstein's steps), CholQR2 per group")
    return RankColumns(mine, bounds, np.arange(k)), None


def _group(d, e, w, first_vector, onenrm, xp, phases):
    """(Z, None, figures, redone) or (None, why, figures, redone): the orthonormal eigenvectors of w
    (n × len(w) on ``xp``), the vectors numbered from ``first_vector`` (0-based in T's spectrum),
    and how many tight clusters dstein redid; ``phases`` times the inverse iteration, the
    orthonormalization, the check and those clusters.

    A tight cluster goes to dstein only where its vectors are poor (did not converge, or ratios
    over REDO after CholQR2; every cluster if CholQR2 itself failed), then the group is
    orthonormalized and checked again: exactly repeated eigenvalues (a spectrum with symmetry:
    hundreds of tight clusters, each dstein call O(n) on the host) pass without it, at ratios of
    about 0.01."""
    native, why = kernels()
    if native is None:
        return None, f"solvers._kernels not built: {why}", "", 0
    with phases("iteration"):
        z, unconverged = _iterates(native, d, e, w, first_vector, onenrm, xp)
    clusters = tight_clusters(w, onenrm)
    outside = unconverged.copy()
    for a, b in clusters:
        outside[a:b] = False
    if outside.any():
        first = first_vector + int(np.flatnonzero(outside)[0])
        why = f"inverse iteration did not converge for {int(outside.sum())} eigenvectors (first: {first + 1})"
        return None, why, "", 0
    redo, done = _holding(clusters, unconverged), []
    while True:
        if redo:
            with phases("tight_clusters"):
                why = _dstein_into(z, d, e, redo, first_vector, xp)
            if why:
                return None, why, "", len(done)
            done += redo
        q, why, figures, ratios = _orthonormal_checked(z, d, e, w, onenrm, xp, phases)
        redo = [c for c in _holding(clusters, None if ratios is None else ratios > REDO) if c not in done]
        if not redo:
            return (q, None, figures, len(done)) if why is None else (None, why, figures, len(done))


def tight_clusters(w, onenrm):
    """[(a, b)]: the runs w[a:b] (2 ≤ b - a ≤ TIGHT_MOST) of eigenvalues each within TIGHT ε ‖T‖₁
    of the next. Their shifts, a few ulps of ‖T‖ off, do not tell their eigenvectors apart: each
    independent iteration drifts to whichever is nearest, often the same one, and no
    orthonormalization recovers the others. dstein, orthogonalizing inside the iteration, does
    (after dstebz, which splits T where it decouples: dstein on an undivided T whose T - λI is
    exactly zero does not converge when ‖T‖ ≪ 1)."""
    close = np.diff(w) <= TIGHT * np.finfo(np.float64).eps * onenrm
    edges = np.flatnonzero(np.diff(np.concatenate(([False], close, [False])).astype(np.int8)))
    return [(int(a), int(b) + 1) for a, b in zip(edges[::2], edges[1::2]) if b + 1 - a <= TIGHT_MOST]


def _iterates(native, d, e, w, first_vector, onenrm, xp):
    """(Y, n × len(w) on ``xp``; a host mask of the vectors whose iteration did not converge)."""
    n, g = d.shape[0], w.shape[0]
    batch = max(1, min(g, BATCH_BYTES // (WORK_BYTES * n)))
    z = None if batch == g else xp.empty((n, g))   # one batch: its iterate is Z itself
    unconverged = np.zeros(g, dtype=bool)
    for j0 in range(0, g, batch):
        count = min(batch, g - j0)
        y, iterations = _inverse_iteration(native, d, e, w[j0:j0 + count], first_vector + j0, onenrm, xp)
        if z is None:
            z = y
        else:
            z[:, j0:j0 + count] = y
        unconverged[j0:j0 + count] = to_host(iterations) < 0
    return z, unconverged


def _holding(clusters, mask):
    """The clusters (a, b) with a True in mask[a:b]; every cluster where mask is None."""
    return [(a, b) for a, b in clusters if mask is None or mask[a:b].any()]


def _dstein_into(z, d, e, clusters, first_vector, xp):
    """Overwrites each cluster's columns of z with LAPACK's dstebz + dstein vectors for its indices;
    None, or why one failed."""
    for a, b in clusters:
        lo, hi = first_vector + a + 1, first_vector + b          # 1-based in T's spectrum
        try:
            z[:, a:b] = xp.asarray(dstebz_dstein(d, e, lo, hi)[1])
        except RuntimeError as err:
            return f"the tight cluster {lo}..{hi}: {err}"
    return None


def _inverse_iteration(native, d, e, w, first_vector, onenrm, xp):
    """The kernels' inverse iteration for eigenvalues w: (Y, n × len(w), iterations per vector)."""
    n, count = d.shape[0], w.shape[0]
    a, r, b, u2, l, y = (xp.empty((n, count)) for _ in range(6))
    swap, iterations = xp.empty((n, count), dtype=np.uint8), xp.empty(count, dtype=np.int32)
    if is_numpy(xp):
        with blas_threads_lent() as threads:
            native.stein_vectors(d.ctypes.data, e.ctypes.data, n, w.ctypes.data, onenrm, first_vector, count,
                                 *(x.ctypes.data for x in (a, r, b, u2, l, swap, y, iterations)), threads=threads)
        return y, iterations
    dd, ee, ww = (xp.asarray(np.ascontiguousarray(x)) for x in (d, e, w))
    native.stein_vectors(dd.data.ptr, ee.data.ptr, n, ww.data.ptr, onenrm, first_vector, count,
                         *(x.data.ptr for x in (a, r, b, u2, l, swap, y, iterations)),
                         device=xp.cuda.Device().id, stream=xp.cuda.get_current_stream().ptr)
    return y, iterations


def _cholqr2(z, xp):
    """(Q, None): z's columns orthonormalized by two Cholesky QR passes, or (None, why) where z's
    columns are too nearly dependent for them (the second pass's factor is not near I)."""
    factor = cholesky_lower if is_numpy(xp) else cholesky_lower_whole
    for step in range(2):
        lower, info = factor(xp, z.T @ z)
        if info:
            return None, f"CholQR pass {step + 1}: the vectors' Gram matrix is not positive definite (minor {info})"
        z = solve_triangular(xp, lower, z.T, lower=True).T
    off = float(xp.abs(xp.tril(lower) - xp.eye(z.shape[1])).max())
    if off > 0.1:
        return None, f"CholQR: the vectors are too nearly dependent (second factor off I by {off:.2g})"
    # dstein's sign rule again (the passes mix the vectors of a cluster): the largest entry positive.
    largest = z[xp.abs(z).argmax(axis=0), xp.arange(z.shape[1])]
    return xp.ascontiguousarray(z * xp.where(largest < 0, -1.0, 1.0)[None, :]), None


def _orthonormal_checked(z, d, e, w, onenrm, xp, phases):
    """(Q, None, figures, ratios) where z's columns orthonormalized (CholQR2) pass dstt21's two
    ratios, ‖QᵀQ - I‖₁ / (n ε) and ‖T Q - Q Λ‖₁ / (n ε ‖T‖₁), column by column at most THRESHOLD;
    else (None, why, figures, ratios). ``ratios``: each column's larger ratio, on the host (None
    where CholQR2 failed); figures: both ratios' largest."""
    with phases("cholqr"):
        q, why = _cholqr2(z, xp)
    if why:
        return None, why, "", None
    with phases("check"):
        n, g = q.shape
        unit = n * np.finfo(np.float64).eps
        orthogonality = to_host(xp.abs(q.T @ q - xp.eye(g)).sum(axis=0)) / unit
        dd, ee, ww = (xp.asarray(x) for x in (d, e, w))
        tq = tridiagonal_product(dd, ee, q) - q * ww[None, :]
        residual = to_host(xp.abs(tq).sum(axis=0)) / (unit * max(onenrm, np.finfo(np.float64).tiny))
    figures = (f"orthogonality {orthogonality.max(initial=0.0):.2g} n eps, "
               f"residual {residual.max(initial=0.0):.2g} n eps |T|")
    ratios = np.fmax(orthogonality, residual)
    if not np.all(ratios <= THRESHOLD):   # NaN fails too
        return None, f"the vectors failed their check: {figures}", figures, np.nan_to_num(ratios, nan=np.inf)
    return q, None, figures, ratios
