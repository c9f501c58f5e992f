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

By step, as SLATE splits its stedc: this module the driver and its recursion tree;
stedc_merge.py a merge of two solved halves; stedc_deflate.py its deflation (dlaed2);
stedc_secular.py the secular equation's roots and the rank-one update's eigenvectors (dlaed4,
dlaed3). stedc_distributed.py runs the same merges over the ranks, each holding its rows.
"""
import numpy as np

from .backend.arrays import to_host
from .phases import Phases
from .stedc_merge import merge


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
