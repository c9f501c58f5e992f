"""ScaLAPACK array descriptor and ``numroc``.

A 2D block-cyclic matrix is fully described by its global shape (M, N), its block shape
(MB, NB), the process row/column that holds the first block (RSRC, CSRC) and the local leading
dimension (LLD). Keeping the same nine-field meaning as ScaLAPACK's DESC_ lets users hand our
local arrays to ScaLAPACK / cuSOLVERMp without re-deriving anything.
"""
from dataclasses import dataclass


def numroc(n, nb, iproc, isrc, nprocs):
    """Number of rows (or columns) of an n-long dimension, cut in blocks of nb and dealt
    cyclically to nprocs processes starting at isrc, that land on process iproc."""
    if n < 0 or nb < 1 or nprocs < 1:
        raise ValueError(f"numroc: bad arguments n={n} nb={nb} nprocs={nprocs}")
    mydist = (iproc - isrc) % nprocs          # distance from the process holding block 0
    nblocks = n // nb                          # complete blocks
    count = (nblocks // nprocs) * nb           # every process gets this many full rounds
    extra = nblocks % nprocs                   # leftover complete blocks go to the first ones
    if mydist < extra:
        count += nb
    elif mydist == extra:
        count += n % nb                        # the partial last block
    return count


@dataclass(frozen=True)
class Descriptor:
    """The fields of a ScaLAPACK dense-matrix descriptor (DTYPE_=1; CTXT_ is the grid object)."""
    m: int
    n: int
    mb: int
    nb: int
    rsrc: int = 0
    csrc: int = 0
    lld: int = 1

    @classmethod
    def create(cls, m, n, mb, nb, grid, rsrc=0, csrc=0):
        """Descriptor for this rank of ``grid``; LLD is the local row count (at least 1)."""
        if m < 0 or n < 0:
            raise ValueError(f"matrix shape must be non-negative, got {m}x{n}")
        if mb < 1 or nb < 1:
            raise ValueError(f"block sizes must be positive, got mb={mb} nb={nb}")
        if not (0 <= rsrc < grid.nprow and 0 <= csrc < grid.npcol):
            raise ValueError(f"source process ({rsrc},{csrc}) outside the {grid.nprow}x{grid.npcol} grid")
        mloc = numroc(m, mb, grid.myrow, rsrc, grid.nprow)
        return cls(m, n, mb, nb, rsrc, csrc, max(1, mloc))

    def as_scalapack(self, context=0):
        """The nine integers ScaLAPACK expects (DTYPE_, CTXT_, M_, N_, MB_, NB_, RSRC_, CSRC_, LLD_)."""
        return (1, context, self.m, self.n, self.mb, self.nb, self.rsrc, self.csrc, self.lld)
