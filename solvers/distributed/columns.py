"""Whole columns held per rank, into the block-cyclic layout.

A rank that computed some columns of a global n × k matrix whole (eigenvectors of its share of
the eigenvalues, for one) sends every other rank the rows and columns that rank owns in the
block-cyclic layout, in one host Alltoallv. The columns are contiguous in a storage order
(rank r holds storage positions bounds[r]:bounds[r+1]) that a permutation maps to the global
column order, so a rank may compute its columns in any order it likes. On one rank nothing moves (the columns,
on the run's backend, are put in order and kept where they are).
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
    mine = to_host(mine)
    row_sets = [local_indices(n, nb, p, 0, grid.nprow) for p in range(grid.nprow)]
    col_sets = [local_indices(k, nb, q, 0, grid.npcol) for q in range(grid.npcol)]
    holder = np.repeat(np.arange(grid.size), np.diff(bounds))     # rank holding storage s
    column_holder = np.empty(k, dtype=np.int64)
    column_slot = np.empty(k, dtype=np.int64)                      # its column in the holder's
    column_holder[place] = holder
    column_slot[place] = np.arange(k) - bounds[holder]
    pieces = []
    for dest in range(grid.size):
        p, q = divmod(dest, grid.npcol)
        cols = col_sets[q][column_holder[col_sets[q]] == grid.rank]
        pieces.append(mine[np.ix_(row_sets[p], column_slot[cols])].astype(dtype, copy=False).ravel())
    send = np.concatenate(pieces) if pieces else np.empty(0, dtype=dtype)
    my_rows, my_cols = row_sets[grid.myrow], col_sets[grid.mycol]
    sources = [np.flatnonzero(column_holder[my_cols] == r) for r in range(grid.size)]
    recv_counts = [my_rows.size * s.size for s in sources]
    recv = np.empty(sum(recv_counts), dtype=dtype)
    coll.alltoallv(np.ascontiguousarray(send, dtype=dtype), [x.size for x in pieces], recv, recv_counts)
    local = np.empty((my_rows.size, my_cols.size), dtype=dtype)
    offset = 0
    for positions, count in zip(sources, recv_counts):
        local[:, positions] = recv[offset:offset + count].reshape(my_rows.size, positions.size)
        offset += count
    return DistMatrix(xp.asarray(local), desc, grid)
