"""One merge of divide and conquer (stedc.py): the eigen-decomposition of
diag(Q₁ D₁ Q₁ᵀ, Q₂ D₂ Q₂ᵀ) + β u uᵀ from its two solved halves, LAPACK's dlaed1 in whole-array
operations on numpy or cupy.

In pieces, so that stedc_distributed.py can make each over the ranks: merge_prepare (the poles,
z and deflation: stedc_deflate.py), the secular roots (stedc_secular.py), merged_eigenvalues,
and merge_finish (the new eigenvectors: one GEMM of Q with the rank-one update's eigenvectors,
``block`` roots at a time, only the wanted ones where a selection is asked).
"""
import math

import numpy as np

from .backend.arrays import to_host
from .phases import Phases
from .stedc_deflate import deflate
from .stedc_secular import loewner_z, rank_one_rows, secular_roots

MERGE_BLOCK = 4096  # roots a merge takes at a time for ẑ and U's rows: bounds its block × k
                    # temporaries (at k = n they were three n × n arrays at the top merge;
                    # docs/PERFORMANCE.md#solver-stedc-merge-block)


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
        keep, rotations = deflate(xp, poles, z, rho)
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
                ut = rank_one_rows(xp, state.dk, zhat, origin[chosen], tau[chosen],
                                    None if norms is None else norms[cols], only)
            with phases("gemm"):     # new eigenvectors: (Q[:, kept] U)ᵀ = Uᵀ Qᵀ[kept]
                for part, sel, rows in parts:
                    picked = ut if sel is None or only is not None else ut[:, sel]
                    out[target[cols], part] = picked @ rows
    return w[first:last], out
