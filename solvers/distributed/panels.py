"""Replicating one block column (or block row) of a DistMatrix on every rank.

Every blocked stage works the same way: one panel of nb columns is made available everywhere,
then each rank updates its own local blocks with it. The panel is assembled in two steps, the
ScaLAPACK way: the grid column that owns it sums zero-padded pieces over the column
communicator (each entry has one contributor, so the result is exact and bitwise identical),
then broadcasts it along every grid row. The two steps are separate functions because potrf
factors the panel in between.
"""
from .indexing import global_to_local


def block_span(k, nb, n):
    """Global [start, stop) of block k."""
    return k * nb, min((k + 1) * nb, n)


def gather_block_col(dm, k, r0, coll, spare_rows=0):
    """Rows r0: of block column k, whole, on the ranks of its owning grid column (None
    elsewhere). ``spare_rows`` extra zero rows at the bottom let a caller piggy-back a few
    numbers on the broadcast that follows."""
    return gather_columns(dm, *block_span(k, dm.nb, dm.shape[1]), r0, coll, spare_rows)


def gather_columns(dm, c0, c1, r0, coll, spare_rows=0):
    """Rows r0: of the global columns c0:c1, which lie in one block column, whole on the ranks
    of the grid column owning it (None elsewhere); ``spare_rows`` as gather_block_col's."""
    k = c0 // dm.nb
    if c1 > c0 and (c1 - 1) // dm.nb != k:
        raise ValueError(f"columns {c0}:{c1} span more than one block column of {dm.nb}")
    if dm.grid.mycol != dm.block_owner_col(k):
        return None
    xp = dm.xp
    buf = xp.zeros((dm.shape[0] - r0 + spare_rows, c1 - c0), dtype=dm.dtype)
    lr0 = dm.first_local_row(r0)
    first = dm.local_block_cols(k).start + c0 - k * dm.nb
    block = dm.local[lr0:, first:first + c1 - c0]
    if dm.grid.nprow == 1:      # every row is local, in order: no index, no sum
        buf[:block.shape[0]] = block
        return buf
    rows, _ = dm.device_index()
    buf[rows[lr0:] - r0] = block
    return coll.allreduce(buf, scope="col")


def bcast_block_col(dm, k, buf, shape, coll):
    """Broadcast a panel held by the owning grid column of block column k along grid rows."""
    if buf is None:
        buf = dm.xp.empty(shape, dtype=dm.dtype)
    return coll.bcast(buf, root=dm.block_owner_col(k), scope="row")


def replicate_block_col(dm, k, r0, coll):
    """Rows r0: of block column k on every rank, as an (m - r0) × width array."""
    j0, j1 = block_span(k, dm.nb, dm.shape[1])
    buf = gather_block_col(dm, k, r0, coll)
    return bcast_block_col(dm, k, buf, (dm.shape[0] - r0, j1 - j0), coll)


def replicate_block_row(dm, k, c1, coll):
    """Columns :c1 of block row k on every rank, as a width × c1 array."""
    xp = dm.xp
    i0, i1 = block_span(k, dm.desc.mb, dm.shape[0])
    root = dm.block_owner_row(k)
    buf = xp.zeros((i1 - i0, c1), dtype=dm.dtype)
    if dm.grid.myrow == root:
        lc1 = dm.first_local_col(c1)
        _, cols = dm.device_index()
        l0 = global_to_local(i0, dm.desc.mb, dm.grid.nprow)
        buf[:, cols[:lc1]] = dm.local[l0:l0 + i1 - i0, :lc1]
        coll.allreduce(buf, scope="row")
    return coll.bcast(buf, root=root, scope="col")
