"""Distributed transpose, and symmetric completion from one triangle.

The stages are written for the lower triangle only; an upper-triangle input (uplo='U') is
turned into the lower one by a transpose, and the two-sided stages need the full symmetric
matrix, obtained by mirroring the referenced triangle. A transpose moves every entry to the
rank that owns its mirror position, so it is one Alltoallv in which sender and receiver agree on
the order of the values without sending indices: both enumerate the entries by (peer rank,
original row, original column).
"""
import numpy as np

from ..backend.arrays import to_host
from .descriptor import Descriptor
from .distmatrix import DistMatrix
from .indexing import local_indices, owner


def transpose(dm, coll):
    """The transpose of ``dm`` (n × m, block sizes swapped) in the same grid."""
    grid, desc = dm.grid, dm.desc
    if desc.rsrc or desc.csrc:
        raise NotImplementedError("transpose assumes the first block on process (0, 0)")
    out_desc = Descriptor.create(desc.n, desc.m, desc.nb, desc.mb, grid)
    out_shape = (local_indices(out_desc.m, out_desc.mb, grid.myrow, 0, grid.nprow).size,
                 local_indices(out_desc.n, out_desc.nb, grid.mycol, 0, grid.npcol).size)
    out = DistMatrix(dm.xp.empty(out_shape, dtype=dm.dtype), out_desc, grid)

    # Sender: entry (i, j) becomes (j, i) of the result, owned by (owner row of j, owner col of i).
    dest = (owner(dm.cols, out_desc.mb, 0, grid.nprow)[None, :] * grid.npcol
            + owner(dm.rows, out_desc.nb, 0, grid.npcol)[:, None]).ravel()
    order = np.argsort(dest, kind="stable")   # stable: keeps (i, j) order within each peer
    send = np.ascontiguousarray(to_host(dm.local)).ravel()[order]

    # Receiver: result entry (r, c) came from original (c, r) on (owner row of c, owner col of r).
    src = (owner(out.cols, desc.mb, 0, grid.nprow)[None, :] * grid.npcol
           + owner(out.rows, desc.nb, 0, grid.npcol)[:, None])
    shape = src.shape
    orig_row = np.broadcast_to(out.cols[None, :], shape).ravel()
    orig_col = np.broadcast_to(out.rows[:, None], shape).ravel()
    place = np.lexsort((orig_col, orig_row, src.ravel()))
    recv = np.empty(src.size, dtype=dm.dtype)

    coll.alltoallv(send, np.bincount(dest, minlength=grid.size),
                   recv, np.bincount(src.ravel(), minlength=grid.size))
    flat = np.empty(recv.size, dtype=dm.dtype)
    flat[place] = recv
    out.local = dm.xp.asarray(flat.reshape(shape))
    return out


def symmetrize(dm, lower, coll):
    """The full symmetric matrix whose ``lower`` (or upper) triangle is that of ``dm``; the
    other triangle of ``dm`` is never read."""
    if dm.shape[0] != dm.shape[1] or dm.desc.mb != dm.desc.nb:
        raise ValueError("symmetrize needs a square matrix with square blocks")
    mirror = transpose(dm.triangle(lower, strict=True), coll)
    full = dm.triangle(lower)
    full.local += mirror.local
    return full


def lower_triangle(dm, lower, coll):
    """The lower triangle L such that the referenced triangle of ``dm`` is L (lower=True) or
    Lᵀ (lower=False); the other triangle of the result is zero."""
    tri = dm.triangle(lower)
    return tri if lower else transpose(tri, coll)
