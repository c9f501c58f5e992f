"""stemr: the eigenvectors of selected eigenvalues of the symmetric tridiagonal T, distributed
(LAPACK dstemr, MRRR: vectors orthogonal without reorthogonalization).

No rank holds them all. The k wanted vectors (eigenvalues il..iu, known bitwise alike on every
rank from stebz.py) are cut into P contiguous groups, one per rank; each rank computes its group
with one dstemr call (range 'I': Z of n × its group only) and the groups are moved into the
block-cyclic n × k layout of Z by one Alltoallv. Memory and work per rank: O(n k / P).

Orthogonality between groups computed by different calls. MRRR makes the vectors of one call
orthogonal to working precision however close their eigenvalues; two calls give vectors each
accurate to about ε‖T‖ / gap, where gap is the distance to the nearest eigenvalue of the other
call. A cut is therefore only ever placed where the gap between neighbouring eigenvalues is at
least CUT_GAP · ‖T‖₁ / n (a quarter of the mean spacing an evenly spread spectrum would have):
the error across the cut is then about ε n / CUT_GAP, well inside the n ε of the orthogonality
test. A cluster (eigenvalues closer than that) is never split; each cut is moved to the
admissible place nearest to the even share, so a cluster makes its group larger, not wrong.
"""
import numpy as np

from .backend.lapack import stemr_vectors
from .distributed.descriptor import Descriptor
from .distributed.distmatrix import DistMatrix
from .distributed.indexing import local_indices
from .stebz import share

CUT_GAP = 0.25


def group_bounds(w, min_gap, parts):
    """Boundaries b₀ = 0 ≤ b₁ ≤ … ≤ b_parts = k of ``parts`` groups of the ascending eigenvalues
    w (group r is w[b_r:b_{r+1}]), each cut placed where w[c] − w[c−1] ≥ min_gap, as near to
    the even share as such a place allows (a cut with no such place left goes to k)."""
    k = w.shape[0]
    allowed = np.flatnonzero(np.diff(w) >= min_gap) + 1 if k > 1 else np.empty(0, dtype=np.int64)
    bounds = [0]
    for r in range(1, parts):
        target = share(k, parts, r)[0]
        cut = k
        if allowed.size:
            at = int(np.searchsorted(allowed, target))
            near = [int(allowed[i]) for i in (at - 1, at) if 0 <= i < allowed.size]
            cut = min(near, key=lambda c: (abs(c - target), c))
        bounds.append(max(cut, bounds[-1]))
    return np.array(bounds + [k])


def stemr(d, e, il, w, layout_nb, grid, coll, dtype, xp):
    """Z (DistMatrix n × k, block size ``layout_nb``, of ``dtype`` on backend ``xp``) holding the
    eigenvectors of eigenvalues il..il+k-1 (1-based) of the tridiagonal (d, e), w their values
    (ascending, the same on every rank). Notes how many vectors this rank computed."""
    n, k = d.shape[0], w.shape[0]
    bounds = group_bounds(w, CUT_GAP * _norm1(d, e) / max(n, 1), grid.size)
    start, stop = int(bounds[grid.rank]), int(bounds[grid.rank + 1])
    coll.note("vectors_this_rank", stop - start)
    coll.note("largest_group", int(np.diff(bounds).max()) if k else 0)
    if stop > start:
        _, mine = stemr_vectors(d, e, il + start, il + stop - 1)      # n × (stop - start)
    else:
        mine = np.empty((n, 0), order="F")
    return _to_block_cyclic(mine, bounds, n, k, layout_nb, grid, coll, dtype, xp)


def _norm1(d, e):
    """‖T‖₁ of the tridiagonal (d, e)."""
    col = np.abs(d).copy()
    col[:-1] += np.abs(e)
    col[1:] += np.abs(e)
    return float(col.max()) if col.size else 0.0


def _to_block_cyclic(mine, bounds, n, k, nb, grid, coll, dtype, xp):
    """Columns bounds[rank]:bounds[rank+1] of the n × k matrix, held whole by each rank, into the
    block-cyclic layout (one host Alltoallv; sender and receiver derive every piece's place from
    the layout, so no index travels)."""
    desc = Descriptor.create(n, k, nb, nb, grid)
    row_sets = [local_indices(n, nb, p, 0, grid.nprow) for p in range(grid.nprow)]
    col_sets = [local_indices(k, nb, q, 0, grid.npcol) for q in range(grid.npcol)]
    start, stop = bounds[grid.rank], bounds[grid.rank + 1]

    def held(cols, lo, hi):   # positions in the sorted cols that fall in [lo, hi)
        return np.arange(np.searchsorted(cols, lo), np.searchsorted(cols, hi))

    pieces = []
    for dest in range(grid.size):
        p, q = divmod(dest, grid.npcol)
        cols = col_sets[q][held(col_sets[q], start, stop)]
        pieces.append(mine[np.ix_(row_sets[p], cols - start)].astype(dtype, copy=False).ravel())
    send = np.concatenate(pieces) if pieces else np.empty(0, dtype=dtype)
    my_rows, my_cols = row_sets[grid.myrow], col_sets[grid.mycol]
    sources = [held(my_cols, bounds[r], bounds[r + 1]) for r in range(grid.size)]
    recv_counts = [my_rows.size * s.size for s in sources]
    recv = np.empty(sum(recv_counts), dtype=dtype)
    coll.alltoallv(np.ascontiguousarray(send, dtype=dtype), [x.size for x in pieces], recv, recv_counts)
    local = np.empty((my_rows.size, my_cols.size), dtype=dtype)
    offset = 0
    for positions, count in zip(sources, recv_counts):
        local[:, positions] = recv[offset:offset + count].reshape(my_rows.size, positions.size)
        offset += count
    return DistMatrix(xp.asarray(local), desc, grid)
