"""``DistMatrix``: a local array + its ScaLAPACK descriptor + the grid it lives on.

The local array holds this rank's entries of the block-cyclic layout in natural (row-major)
order; ``rows`` / ``cols`` are the global indices of its rows / columns (sorted), which is all
the stages need to place replicated panels against local data. Moving whole matrices to and from
rank 0 uses host Scatterv / Gatherv through ``Collectives`` so it is counted like everything else.
"""
import numpy as np

from ..backend.arrays import array_module, to_host
from .descriptor import Descriptor
from .indexing import global_to_local, local_indices, owner


class DistMatrix:
    def __init__(self, local, desc, grid):
        self.local = local
        self.desc = desc
        self.grid = grid
        self.xp = array_module(local)
        self.rows = local_indices(desc.m, desc.mb, grid.myrow, desc.rsrc, grid.nprow)
        self.cols = local_indices(desc.n, desc.nb, grid.mycol, desc.csrc, grid.npcol)
        if local.shape != (self.rows.size, self.cols.size):
            raise ValueError(f"local array shape {local.shape} does not match the descriptor "
                             f"({self.rows.size}, {self.cols.size})")
        self._dev_index = None

    # ---- construction -------------------------------------------------------------
    @classmethod
    def empty(cls, m, n, nb, grid, dtype, xp=np, fill=np.nan):
        """A new m × n matrix with square nb blocks, every local entry set to ``fill``
        (NaN by default, so that a stage forgetting to write an entry is noticed)."""
        desc = Descriptor.create(m, n, nb, nb, grid)
        shape = (local_indices(m, nb, grid.myrow, 0, grid.nprow).size,
                 local_indices(n, nb, grid.mycol, 0, grid.npcol).size)
        return cls(xp.full(shape, fill, dtype=dtype), desc, grid)

    @classmethod
    def from_global(cls, a, grid, nb):
        """Every rank holds the same global ``a`` and keeps its own blocks (no messages)."""
        xp = array_module(a)
        desc = Descriptor.create(a.shape[0], a.shape[1], nb, nb, grid)
        rows = local_indices(desc.m, nb, grid.myrow, 0, grid.nprow)
        cols = local_indices(desc.n, nb, grid.mycol, 0, grid.npcol)
        if grid.nprow == grid.npcol == 1:   # every block is ours: one copy, no gathers
            local = xp.array(a, order="C")
        else:
            local = xp.ascontiguousarray(a[xp.asarray(rows)][:, xp.asarray(cols)])
        return cls(local, desc, grid)

    @classmethod
    def scatter(cls, a, shape, dtype, grid, nb, coll, root=0, xp=np):
        """Distribute the global ``a`` held by rank ``root`` (ignored elsewhere)."""
        m, n = shape
        desc = Descriptor.create(m, n, nb, nb, grid)
        parts = _all_local_index_sets(m, n, nb, grid)
        sendbuf, counts = None, [r.size * c.size for r, c in parts]
        if grid.rank == root:
            host = np.asarray(to_host(a), dtype=dtype)
            sendbuf = np.concatenate([host[np.ix_(r, c)].ravel() for r, c in parts])
        mine = parts[grid.rank]
        recv = np.empty(mine[0].size * mine[1].size, dtype=dtype)
        coll.scatterv(sendbuf, counts, recv, root=root)
        return cls(xp.asarray(recv.reshape(mine[0].size, mine[1].size)), desc, grid)

    def like(self, fill=np.nan, dtype=None):
        """A new matrix with this one's layout."""
        return DistMatrix(self.xp.full(self.local.shape, fill, dtype=dtype or self.dtype),
                          self.desc, self.grid)

    def copy(self):
        return DistMatrix(self.local.copy(), self.desc, self.grid)

    # ---- properties -----------------------------------------------------------------
    @property
    def shape(self):
        return self.desc.m, self.desc.n

    @property
    def nb(self):
        return self.desc.nb

    @property
    def dtype(self):
        return self.local.dtype

    def device_index(self):
        """rows / cols as arrays of this matrix's backend (cached), for fancy indexing."""
        if self._dev_index is None:
            self._dev_index = (self.xp.asarray(self.rows), self.xp.asarray(self.cols))
        return self._dev_index

    def first_local_row(self, g):
        """Local index of the first local row whose global index is >= g."""
        return int(np.searchsorted(self.rows, g))

    def first_local_col(self, g):
        return int(np.searchsorted(self.cols, g))

    def block_owner_col(self, k):
        """Grid column holding block column k."""
        return owner(k * self.desc.nb, self.desc.nb, self.desc.csrc, self.grid.npcol)

    def block_owner_row(self, k):
        return owner(k * self.desc.mb, self.desc.mb, self.desc.rsrc, self.grid.nprow)

    def local_block_cols(self, k):
        """Local column slice of block column k (valid on its owner column)."""
        j0 = k * self.desc.nb
        l0 = global_to_local(j0, self.desc.nb, self.grid.npcol)
        return slice(l0, l0 + min(self.desc.nb, self.desc.n - j0))

    def local_block_rows(self, k):
        i0 = k * self.desc.mb
        l0 = global_to_local(i0, self.desc.mb, self.grid.nprow)
        return slice(l0, l0 + min(self.desc.mb, self.desc.m - i0))

    # ---- whole-matrix views ---------------------------------------------------------
    def triangle(self, lower, strict=False):
        """Copy with every entry outside the lower (or upper) triangle set to zero; what a
        stage uses so that the unreferenced triangle, which may hold anything (NaN
        included), can never leak into the result."""
        xp = self.xp
        keep = _triangle_mask(*self.device_index(), lower, strict)   # built where the data is
        local = xp.where(keep, self.local, xp.zeros((), dtype=self.dtype))
        return DistMatrix(xp.ascontiguousarray(local), self.desc, self.grid)

    def referenced_finite(self, lower):
        """True if every entry of the referenced triangle held by this rank is finite."""
        keep = _triangle_mask(*self.device_index(), lower, False)
        return bool(self.xp.all(self.xp.isfinite(self.local) | ~keep))

    def to_global(self, coll):
        """The whole matrix on every rank (zero-padded Allreduce: each entry has exactly one
        contributor, so the sum is exact and identical everywhere)."""
        xp = self.xp
        full = xp.zeros(self.shape, dtype=self.dtype)
        rows, cols = self.device_index()
        full[rows[:, None], cols[None, :]] = self.local
        return coll.allreduce(full, scope="all")

    def gather(self, coll, root=0):
        """The whole matrix as a numpy array on ``root`` (None elsewhere)."""
        m, n = self.shape
        parts = _all_local_index_sets(m, n, self.desc.nb, self.grid)
        send = np.ascontiguousarray(to_host(self.local)).ravel()
        recv = None
        if self.grid.rank == root:
            recv = np.empty(sum(r.size * c.size for r, c in parts), dtype=self.dtype)
        coll.gatherv(send, recv, [r.size * c.size for r, c in parts], root=root)
        if self.grid.rank != root:
            return None
        full = np.empty((m, n), dtype=self.dtype)
        offset = 0
        for r, c in parts:
            full[np.ix_(r, c)] = recv[offset:offset + r.size * c.size].reshape(r.size, c.size)
            offset += r.size * c.size
        return full


def _triangle_mask(rows, cols, lower, strict):
    if lower:
        return rows[:, None] > cols[None, :] if strict else rows[:, None] >= cols[None, :]
    return rows[:, None] < cols[None, :] if strict else rows[:, None] <= cols[None, :]


def _all_local_index_sets(m, n, nb, grid):
    """(global rows, global cols) of every rank's local array, in rank order."""
    return [(local_indices(m, nb, rank // grid.npcol, 0, grid.nprow),
             local_indices(n, nb, rank % grid.npcol, 0, grid.npcol))
            for rank in range(grid.size)]
