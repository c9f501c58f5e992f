"""Distributed (conjugate) transpose, and Hermitian completion from one triangle.

The stages are written for the lower triangle only; an upper-triangle input (uplo='U') is
turned into the lower one by a conjugate transpose, and the two-sided stages need the full
symmetric / Hermitian matrix, obtained by mirroring the referenced triangle (conjugated). As in
LAPACK's c/z routines, the imaginary parts of a Hermitian matrix's diagonal are never read. A transpose moves every entry to the
rank that owns its mirror position, so it is one Alltoallv in which sender and receiver agree on
the order of the values without sending indices: what one rank sends another is a sub-matrix
(its local rows owned, after the transpose, by the receiver's grid column, crossed with its
local columns owned by the receiver's grid row) in row-major order, so both sides derive the
layout from the block-cyclic maps alone.
"""
import numpy as np

from ..backend.arrays import is_numpy, to_host
from .descriptor import Descriptor
from .distmatrix import DistMatrix
from .indexing import local_indices, owner


def transpose(dm, coll, conjugate=False):
    """The transpose of ``dm`` (n × m, block sizes swapped) in the same grid; with
    ``conjugate``, the conjugate transpose (the same for real data).

    Entry (i, j) moves to the rank at grid coordinates (owner row of j, owner column of i). On a
    one-rank grid that is a local transpose and nothing is sent.
    """
    grid, desc, xp = dm.grid, dm.desc, dm.xp
    if desc.rsrc or desc.csrc:
        raise NotImplementedError("transpose assumes the first block on process (0, 0)")
    out_desc = Descriptor.create(desc.n, desc.m, desc.nb, desc.mb, grid)
    local = dm.local.conj() if conjugate else dm.local
    if grid.size == 1:
        return DistMatrix(xp.ascontiguousarray(local.T), out_desc, grid)
    out_shape = (local_indices(out_desc.m, out_desc.mb, grid.myrow, 0, grid.nprow).size,
                 local_indices(out_desc.n, out_desc.nb, grid.mycol, 0, grid.npcol).size)
    out = DistMatrix(xp.empty(out_shape, dtype=dm.dtype), out_desc, grid)

    # Sender: local row i goes to grid column owner(i), local column j to grid row owner(j).
    send_parts = _parts_by_rank(grid, xp, rows=_by_owner(dm.rows, desc.mb, grid.npcol),
                                cols=_by_owner(dm.cols, desc.nb, grid.nprow))
    send = to_host(xp.concatenate([local[r[:, None], c[None, :]].ravel()
                                   for r, c in send_parts]))
    # Receiver: result row r (original column) came from grid column owner(r), result column c
    # (original row) from grid row owner(c); each chunk is the sender's (c, r) sub-matrix.
    recv_parts = _parts_by_rank(grid, xp, rows=_by_owner(out.rows, desc.nb, grid.npcol),
                                cols=_by_owner(out.cols, desc.mb, grid.nprow))
    recv_counts = [r.size * c.size for r, c in recv_parts]
    recv = np.empty(sum(recv_counts), dtype=dm.dtype)
    coll.alltoallv(send, [r.size * c.size for r, c in send_parts], recv, recv_counts)

    recv = xp.asarray(recv)
    offset = 0
    for (r, c), count in zip(recv_parts, recv_counts):
        chunk = recv[offset:offset + count].reshape(c.size, r.size)
        out.local[r[:, None], c[None, :]] = chunk.T
        offset += count
    return out


SYMMETRIZE_BLOCK = 2048   # columns mirrored at a time by the one-rank in-place completion
HOST_TILE = 256           # ... and at most this many on the host (a tile pair in cache)


def symmetrize(dm, lower, coll, overwrite=False):
    """The full symmetric / Hermitian matrix whose ``lower`` (or upper) triangle is that of
    ``dm``, with the real part of its diagonal; the other triangle of ``dm`` is never read.
    ``overwrite``: ``dm`` may be destroyed; on one rank it then becomes the result itself (no
    n × n temporary: a stage's own intermediate, the caller's input never)."""
    if dm.shape[0] != dm.shape[1] or dm.desc.mb != dm.desc.nb:
        raise ValueError("symmetrize needs a square matrix with square blocks")
    if overwrite and dm.grid.size == 1:
        _complete_in_place(dm.xp, dm.local if lower else dm.local.T)
        return dm
    mirror = transpose(dm.triangle(lower, strict=True), coll, conjugate=True)
    full = _real_diagonal(dm.triangle(lower))
    full.local += mirror.local
    return full


def _complete_in_place(xp, a):
    """a ← the Hermitian matrix of a's lower triangle, with the real part of its diagonal, in
    square tiles (SYMMETRIZE_BLOCK columns on a GPU, where each tile costs launches; at most
    HOST_TILE on the host, where a tile and its mirror stay in cache while the transpose is
    read): bitwise what the copying way (triangle + conjugate mirror) gives, whose sums turn
    each -0.0 into +0.0."""
    n = a.shape[0]
    tile = SYMMETRIZE_BLOCK if not is_numpy(xp) else min(SYMMETRIZE_BLOCK, HOST_TILE)
    for i0 in range(0, n, tile):
        i1 = min(i0 + tile, n)
        diagonal = xp.tril(a[i0:i1, i0:i1])
        if xp.iscomplexobj(diagonal):
            xp.fill_diagonal(diagonal, diagonal.diagonal().real.copy())
        a[i0:i1, i0:i1] = diagonal + xp.tril(diagonal, -1).conj().T
        for j0 in range(0, i0, tile):   # the tiles left of the diagonal, and their mirrors
            lower, upper = a[i0:i1, j0:j0 + tile], a[j0:j0 + tile, i0:i1]
            lower += 0
            upper[...] = lower.conj().T
            upper += 0


def lower_triangle(dm, lower, coll):
    """The lower triangle L such that the referenced triangle of ``dm`` is L (lower=True) or
    Lᴴ (lower=False), with the real part of its diagonal; the other triangle of the result is
    zero."""
    tri = _real_diagonal(dm.triangle(lower))
    return tri if lower else transpose(tri, coll, conjugate=True)


def _real_diagonal(dm):
    """``dm`` with the imaginary parts of its diagonal entries set to zero, in place (each rank
    its own; no messages); real matrices are returned as they are."""
    if dm.xp.iscomplexobj(dm.local):
        rows, cols = dm.device_index()
        diagonal = rows[:, None] == cols[None, :]
        dm.local[diagonal] = dm.local[diagonal].real
    return dm


def _by_owner(indices, nb, nprocs):
    """For each process coordinate, the positions in ``indices`` (sorted global indices, block
    size nb, first block on coordinate 0) of those it holds; sorted, so order is kept."""
    held_by = owner(indices, nb, 0, nprocs)
    return [np.flatnonzero(held_by == p) for p in range(nprocs)]


def _parts_by_rank(grid, xp, rows, cols):
    """(local rows, local columns) exchanged with each peer rank, in rank order: peer
    (a, b) = rank a * npcol + b is paired with rows[b] and cols[a], as device index arrays."""
    return [(xp.asarray(rows[b]), xp.asarray(cols[a]))
            for a in range(grid.nprow) for b in range(grid.npcol)]
