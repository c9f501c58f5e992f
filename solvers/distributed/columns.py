"""Whole columns (or whole rows) held per rank, into the block-cyclic layout.

A rank that computed some columns of a global n × k matrix whole (eigenvectors of its share of
the eigenvalues, for one) sends every other rank the rows and columns that rank owns in the
block-cyclic layout, in one host Alltoallv. The columns are contiguous in a storage order
(rank r holds storage positions bounds[r]:bounds[r+1]) that a permutation maps to the global
column order, so a rank may compute its columns in any order it likes. On one rank nothing
moves (the columns, on the run's backend, are put in order and kept where they are). Whole rows
(the distributed divide and conquer's rows of Q) are the same exchange for the transposed matrix.
"""
from typing import NamedTuple

import numpy as np

from ..backend.arrays import array_module, to_host
from .descriptor import Descriptor
from .distmatrix import DistMatrix
from .indexing import local_indices


class RankColumns(NamedTuple):
    """Columns of an n × k matrix held whole per rank: this rank's ``mine`` (n × its count, numpy
    or cupy), storage positions ``bounds[r]:bounds[r+1]`` on rank r, position s being column
    ``place[s]`` (host arrays, the same on every rank)."""
    mine: object
    bounds: np.ndarray
    place: np.ndarray


def columns_to_block_cyclic(mine, bounds, place, n, k, nb, grid, coll, dtype, xp):
    """The vectors at storage positions bounds[rank]:bounds[rank+1], held whole by each rank
    (``mine``, numpy or cupy), into the block-cyclic n × k layout of backend ``xp``, storage
    position s going to column place[s] (one host Alltoallv; sender and receiver derive every
    piece's place from bounds and place, which every rank has, so no index travels)."""
    desc = Descriptor.create(n, k, nb, nb, grid)
    if grid.size == 1:
        order = np.argsort(place)
        local = mine if np.array_equal(order, np.arange(k)) else mine[:, array_module(mine).asarray(order)]
        return DistMatrix(xp.ascontiguousarray(xp.asarray(local), dtype=dtype), desc, grid)
    row_sets = [local_indices(n, nb, p, 0, grid.nprow) for p in range(grid.nprow)]
    col_sets = [local_indices(k, nb, q, 0, grid.npcol) for q in range(grid.npcol)]
    local = _exchange(mine, bounds, place, row_sets, col_sets,
                      lambda rank: divmod(rank, grid.npcol), grid, coll, dtype)
    return DistMatrix(xp.asarray(local), desc, grid)


def rows_to_block_cyclic(mine_t, bounds, desc, grid, coll, dtype, xp):
    """Rows bounds[rank]:bounds[rank+1] of an m × k matrix (layout ``desc``), held whole by
    each rank and given transposed (``mine_t``, k × their count: the columns of the
    transpose), into the block-cyclic layout (one host Alltoallv), on mine_t's backend."""
    row_sets = [local_indices(desc.m, desc.mb, p, 0, grid.nprow) for p in range(grid.nprow)]
    col_sets = [local_indices(desc.n, desc.nb, q, 0, grid.npcol) for q in range(grid.npcol)]
    # The transpose's block (q, p) is the block (p, q) of the matrix, transposed.
    local = _exchange(mine_t, bounds, np.arange(desc.m), col_sets, row_sets,
                      lambda rank: divmod(rank, grid.npcol)[::-1], grid, coll, dtype,
                      transposed=True)
    return DistMatrix(xp.asarray(local), desc, grid)


def rows_to_rank_columns(mine_t, row_bounds, col_bounds, coll, dtype):
    """Rows row_bounds[r]:row_bounds[r+1] of an m × k matrix held whole by each rank r and given
    transposed (``mine_t``: k × its row count), into columns col_bounds[r]:col_bounds[r+1] held
    whole by each rank (m × its column count, of ``dtype`` on mine_t's backend), by one host
    Alltoallv: a transpose's rows, cut at col_bounds, are already in destination order."""
    xp, rank = array_module(mine_t), coll.grid.rank
    rows_held, columns = np.diff(row_bounds), np.diff(col_bounds)
    send = np.ascontiguousarray(to_host(mine_t), dtype=dtype).ravel()
    recv = np.empty(int(rows_held.sum()) * int(columns[rank]), dtype=dtype)
    coll.alltoallv(send, [int(c * rows_held[rank]) for c in columns], recv,
                   [int(r * columns[rank]) for r in rows_held])
    del send
    recv = xp.asarray(recv)
    mine = xp.empty((int(row_bounds[-1]), int(columns[rank])), dtype=dtype)
    offset = 0
    for source, count in enumerate(rows_held):
        piece = recv[offset:offset + count * columns[rank]].reshape(int(columns[rank]), int(count))
        mine[row_bounds[source]:row_bounds[source + 1], :] = piece.T
        offset += count * columns[rank]
    return mine


def _exchange(mine, bounds, place, row_sets, col_sets, coordinates, grid, coll, dtype,
              transposed=False):
    """This rank's block (row_sets[i], col_sets[j]) with (i, j) = coordinates(rank), of the
    matrix whose columns are held whole (``mine``: storage positions bounds[rank]:bounds[rank+1],
    position s being column place[s]), an array of mine's backend (its transpose if
    ``transposed``). Pieces are cut and placed where ``mine`` lives (on a GPU, the device's
    gathers); only the packed buffers cross host memory, for the Alltoallv."""
    xp = array_module(mine)
    k = place.shape[0]
    holder = np.repeat(np.arange(grid.size), np.diff(bounds))     # rank holding storage s
    column_holder = np.empty(k, dtype=np.int64)
    column_slot = np.empty(k, dtype=np.int64)                      # its column in the holder's
    column_holder[place] = holder
    column_slot[place] = np.arange(k) - bounds[holder]
    slots = []
    for dest in range(grid.size):
        p, q = coordinates(dest)
        slots.append((row_sets[p], column_slot[col_sets[q][column_holder[col_sets[q]] == grid.rank]]))
    send_counts = [rows.size * cols.size for rows, cols in slots]
    send = xp.empty(sum(send_counts), dtype=dtype)
    offset = 0
    for (rows, cols), count in zip(slots, send_counts):
        if count:
            send[offset:offset + count].reshape(rows.size, cols.size)[...] = \
                mine[xp.asarray(rows)[:, None], xp.asarray(cols)[None, :]]
        offset += count
    send = np.ascontiguousarray(to_host(send))
    my_p, my_q = coordinates(grid.rank)
    my_rows, my_cols = row_sets[my_p], col_sets[my_q]
    sources = [np.flatnonzero(column_holder[my_cols] == r) for r in range(grid.size)]
    recv_counts = [my_rows.size * s.size for s in sources]
    recv = np.empty(sum(recv_counts), dtype=dtype)
    coll.alltoallv(send, send_counts, recv, recv_counts)
    del send
    recv = xp.asarray(recv)
    shape = (my_rows.size, my_cols.size)
    local = xp.empty(shape[::-1] if transposed else shape, dtype=dtype)
    offset = 0
    for positions, count in zip(sources, recv_counts):
        piece = recv[offset:offset + count].reshape(my_rows.size, positions.size)
        if count and transposed:
            local[xp.asarray(positions), :] = piece.T
        elif count:
            local[:, xp.asarray(positions)] = piece
        offset += count
    return local
