"""Divide and conquer over the ranks: each rank computes and keeps only its own rows of the
tridiagonal eigenvector matrix (all n eigenvectors, some of their components).

The ranks split T as stedc.py splits it, down a tree of the ranks (rank_tree): a node of P
ranks tears T into two parts of sizes in proportion to ⌊P/2⌋ and ⌈P/2⌉ ranks, until a part
has one rank, which solves it alone (LAPACK's dstevd on the host, stedc.py on a GPU). Above,
every merge of stedc.py is made by the ranks of its node together, which works because a merge
only ever combines the *eigenvectors* (rows of Qᵀ, columns of Q): with Q = diag(Q₁, Q₂) and the
rank-one update's eigenvectors U, the new Q is Q U, and the rank holding rows R of Q forms
rows R of Q U from rows R of Q alone. What the ranks of a node must share is small:

  the halves' eigenvalues and z (Q₁'s last row, Q₂'s first): n numbers each, from the rank
  that has them (one zero-padded Allreduce per tree level, all of that level's merges in it);
  the secular roots, then Löwner's ẑ, then the norms of U's rows: each rank of the node finds
  an equal share of each, and one zero-padded Allreduce per level gives every rank all of it.

Every rank of a node makes the same deflation from the same bits, and forms the columns of U
that its rows need (those of its half's eigenvectors), a block of U's rows at a time. Each
entry of a shared array has one contributor, so the sums are exact and the eigenvalues are
bitwise the same on every rank. Memory per rank: O(n²/P) (its rows of Q, the merge's gathered
operands, one block of U); work per rank: its block's solve and 1/P of each merge's GEMM,
roots, ẑ and norms, against all of it on every rank when the eigenvector matrix is replicated. ScaLAPACK's pdstedc distributes the merges too, with Q in 2D
blocks and pdgemm; here Q is by rows, so a merge's product needs no messages at all.

For a subset the root's merge forms only the wanted eigenvectors (stedc.py): each rank its rows
of them, the norms of U's rows found in shares for the wanted roots only.
"""
from dataclasses import dataclass

import numpy as np

from .backend.arrays import is_numpy
from .backend.lapack import stevd_vectors
from .phases import Phases
from .stebz import share
from .stedc import stedc_rows, torn_blocks
from .stedc_merge import merge_finish, merge_prepare, merged_eigenvalues, wanted_roots
from .stedc_secular import loewner_z, row_norms, secular_roots


@dataclass(frozen=True)
class Node:
    """Rows lo..hi-1 of T, solved by ranks first..first+ranks-1: split at ``split`` into
    ``children`` (two Nodes), or, without children, solved alone by rank ``first`` (the other
    ranks of a childless node, if any, hold no rows)."""
    lo: int
    hi: int
    first: int
    ranks: int
    split: int = 0
    children: tuple = ()

    def holds(self, rank):
        return self.first <= rank < self.first + self.ranks


def rank_tree(lo, hi, first, ranks):
    """The tree of the ranks first..first+ranks-1 over rows lo..hi-1: the left part gets ⌊P/2⌋
    ranks and rows in proportion (at least one row each side); one rank, or fewer than two
    rows, makes a leaf."""
    n = hi - lo
    if ranks == 1 or n < 2:
        return Node(lo, hi, first, ranks)
    left = ranks // 2
    m = lo + max(1, min(n - 1, n * left // ranks))
    return Node(lo, hi, first, ranks, m, (rank_tree(lo, m, first, left),
                                          rank_tree(m, hi, first + left, ranks - left)))


def levels(root):
    """The merges, deepest first: a list per tree depth of the nodes with children."""
    by_depth, stack = [], [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if node.children:
            by_depth += [[] for _ in range(depth + 1 - len(by_depth))]
            by_depth[depth].append(node)
            stack += [(child, depth + 1) for child in node.children]
    return by_depth[::-1]


def row_bounds(root, size):
    """bounds[r]..bounds[r+1]: the rows of Q that rank r holds (empty for a rank of a
    childless node other than its first)."""
    leaves = [root]
    while any(node.children for node in leaves):
        leaves = [part for node in leaves for part in (node.children or (node,))]
    bounds = np.zeros(size + 1, dtype=np.int64)
    for leaf in leaves:
        bounds[leaf.first + 1:] = leaf.hi
    return bounds


def stedc_distributed(xp, d, e, coll, solve_alone, timings=None, select=None):
    """(w, Qᵀ's columns lo..hi-1, bounds): every eigenvalue of the tridiagonal (d, e) (host
    float64, the same on every rank of coll's grid), ascending and bitwise the same on every
    rank; this rank's rows lo, hi = bounds[rank], bounds[rank+1] of the eigenvector matrix,
    transposed (n × (hi-lo), an xp array); bounds of every rank (row_bounds).
    ``select`` = (first, last) (0-based, last excluded) keeps the eigenpairs first..last-1 only
    (w and Qᵀ's rows): the top merge forms only those eigenvectors' rows, with the same
    eigenvalue bits. ``solve_alone(xp, d, e, phases)`` gives (w, Qᵀ) of a rank's own block."""
    grid, n = coll.grid, d.shape[0]
    phases = Phases(xp, timings)
    scale = float(max(np.abs(d).max(), np.abs(e).max() if n > 1 else 0.0)) if n else 0.0
    scale = scale or 1.0
    d, e = d / scale, e / scale
    root = rank_tree(0, n, 0, grid.size)
    bounds = row_bounds(root, grid.size)
    starts = [leaf_lo for leaf_lo in np.unique(bounds[1:-1]) if 0 < leaf_lo < n]
    blocks = dict(zip([0, *starts], torn_blocks(d, e, starts)))
    held = _Held(_leaf_of(root, grid.rank), None, None)
    if grid.rank == held.node.first:
        with phases("alone"):
            held.w, held.qt = solve_alone(xp, *blocks[held.node.lo], phases)
    else:
        held.qt = xp.zeros((held.node.hi - held.node.lo, 0))
    for merges in levels(root):   # the last level is the root's merge, the only one selecting
        _merge_level(xp, merges, held, e, bounds, coll, phases,
                     select if merges == [root] else None)
    if not root.children:       # one block, solved by rank 0 alone: its eigenvalues to all
        held.w = _shared(xp, coll, [(0, held.w if grid.rank == 0 else None)], n)
        if select is not None:
            held.w, held.qt = held.w[select[0]:select[1]], held.qt[select[0]:select[1]]
    return held.w * scale, held.qt, bounds


class _Held:
    """What a rank holds between levels: its node, the node's eigenvalues (None where this
    rank did not compute them) and its rows of the node's Q, transposed."""

    def __init__(self, node, w, qt):
        self.node, self.w, self.qt = node, w, qt


def _leaf_of(node, rank):
    while node.children:
        node = next(child for child in node.children if child.holds(rank))
    return node


def _merge_level(xp, merges, held, e, bounds, coll, phases, select=None):
    """Every merge of one tree level, each by its node's ranks (four Allreduces for all of
    them); ``held`` moves up to this rank's node of the level, if it has one. ``select``
    (the root's level only): the eigenpairs first..last-1 of the merge are formed, U's norms
    found for their roots only."""
    rank, n = coll.grid.rank, e.shape[0] + 1
    node = next((x for x in merges if x.holds(rank)), None)
    # Each child's eigenvalues from its first rank, z's halves from the ranks with those rows.
    pieces = []
    for x in merges:
        left, right = x.children
        for child, row, at in ((left, x.split - 1, x.lo), (right, x.split, x.split)):
            if child.first == rank:
                pieces.append((at, held.w))
            if bounds[rank] <= row < bounds[rank + 1]:
                pieces.append((n + at, held.qt[:, row - int(bounds[rank])]))
    shared = _shared(xp, coll, pieces, 2 * n)
    state = None
    if node is not None:
        left, right = node.children
        if left.holds(rank):
            qt1, qt2 = held.qt, xp.zeros((right.hi - right.lo, 0))
        else:
            qt1, qt2 = xp.zeros((left.hi - left.lo, 0)), held.qt
        held.qt = None    # the merge's own Qᵀ replaces the child's
        state = merge_prepare(xp, shared[node.lo:node.split], qt1, shared[node.split:node.hi],
                              qt2, float(e[node.split - 1]), shared[n + node.lo:n + node.hi],
                              phases)
        del qt1, qt2
    # The roots, then Löwner's ẑ, then the norms of U's rows: each found by the node's ranks in
    # equal shares (each needs the whole of the one before), gathered by position.
    k = state.k if state is not None else 0
    with phases("roots"):
        origin, tau = _by_shares(xp, coll, n, node, k, 2, lambda first, last: [
            part.astype(np.float64)
            for part in secular_roots(xp, state.dk, state.zk, state.rho, first, last)])
    wanted = 0
    if state is not None:
        origin = origin.astype(np.int64)
        position = None if select is None else merged_eigenvalues(xp, state, origin, tau)[1]
        roots = wanted_roots(xp, state, position, select)     # U's rows that are formed
        wanted = roots.size
    # U a block of rows at a time: a quarter of a rank's rows (the same on the node's ranks).
    block = 0 if node is None else max(256, -(-(node.hi - node.lo) // (4 * node.ranks)))
    with phases("vectors"):
        zhat, = _by_shares(xp, coll, n, node, k, 1, lambda first, last: [
            loewner_z(xp, state.dk, state.zk, state.rho, origin, tau, block, first, last)])
        norms, = _by_shares(xp, coll, n, node, wanted, 1, lambda first, last: [
            row_norms(xp, state.dk, zhat, origin[roots[first:last]], tau[roots[first:last]])])
    if state is None:
        return
    held.w, held.qt = merge_finish(xp, state, origin, tau, phases, block, zhat, norms, select)
    held.node = node


def _by_shares(xp, coll, n, node, count, width, compute):
    """The ``width`` arrays ``compute(first, last)`` gives for entries first..last-1 of
    ``count`` (at most the merge's order) entries of a merge, computed by each rank of the
    node for its equal share and gathered whole (every rank of the grid takes part in the
    Allreduce; one without a merge here gets None)."""
    pieces = []
    if node is not None:
        mine = share(count, node.ranks, coll.grid.rank - node.first)
        pieces = [(j * n + node.lo + mine[0], part) for j, part in enumerate(compute(*mine))]
    total = _shared(xp, coll, pieces, width * n)
    if node is None:
        return [None] * width
    return [total[j * n + node.lo:j * n + node.lo + count] for j in range(width)]


def _shared(xp, coll, pieces, length):
    """The zero-padded sum over all ranks of each rank's ``pieces`` [(offset, array)], placed at
    their offsets: every entry has one contributor, so every rank gets the contributor's bits."""
    total = xp.zeros(length, dtype=np.float64)
    for at, values in pieces:
        if values is not None and values.shape[0]:
            total[at:at + values.shape[0]] = values
    return coll.allreduce(total, scope="all")


def solve_alone_host(xp, d, e, phases):
    """A rank's own block by LAPACK's dstevd (numpy)."""
    w, z = stevd_vectors(d, e)
    return w, z.T


def solve_alone_device(leaves, leaf_size):
    """A rank's own block by stedc.py on the device, its leaves by ``leaves`` on the host."""
    def solve(xp, d, e, phases):
        return stedc_rows(xp, d, e, leaves, leaf_size, phases)
    return solve


def for_backend(xp, leaves, leaf_size):
    """The block solver of a rank for backend xp."""
    return solve_alone_host if is_numpy(xp) else solve_alone_device(leaves, leaf_size)
