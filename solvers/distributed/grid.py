"""The pr × pc process grid and its row / column sub-communicators.

Ranks are laid out row-major (ScaLAPACK's default 'Row' order): rank = myrow * npcol + mycol.
Every distributed stage talks along a grid row (e.g. summing partial matrix-vector products
over the columns a rank does not own) or a grid column (e.g. broadcasting a block row), so the
two sub-communicators are built once here with ``Split`` and reused.
"""
import math


def default_shape(nprocs):
    """The most square pr × pc with pr * pc == nprocs and pr <= pc (fewer messages per step)."""
    if nprocs < 1:
        raise ValueError(f"need at least one process, got {nprocs}")
    pr = int(math.isqrt(nprocs))
    while nprocs % pr:
        pr -= 1
    return pr, nprocs // pr


def parse_shape(text):
    """'2x3' → (2, 3); raises ValueError with a one-line message otherwise."""
    try:
        pr, pc = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"grid must look like PRxPC (e.g. 2x2), got {text!r}") from None
    if pr < 1 or pc < 1:
        raise ValueError(f"grid dimensions must be positive, got {text!r}")
    return pr, pc


def grid_shape(size, shape=None):
    """``shape`` checked against a communicator of ``size`` ranks (ValueError unless it uses
    exactly all of them), or the default shape."""
    nprow, npcol = default_shape(size) if shape is None else shape
    if nprow < 1 or npcol < 1:
        raise ValueError(f"grid dimensions must be positive, got {nprow}x{npcol}")
    if nprow * npcol != size:
        raise ValueError(f"grid {nprow}x{npcol} needs {nprow * npcol} MPI ranks but "
                         f"{size} are running; the grid must use exactly all ranks")
    return nprow, npcol


class ProcessGrid:
    """A pr × pc grid over an MPI communicator (every rank of it takes part).

    The shape must use exactly all ranks: a grid larger than the communicator cannot exist, and
    a smaller one would leave ranks idle yet still obliged to join every world collective.
    The check depends only on arguments every rank has, so every rank raises the same error.
    """

    def __init__(self, comm, shape=None):
        nprow, npcol = grid_shape(comm.Get_size(), shape)
        self.comm = comm
        self.nprow, self.npcol = nprow, npcol
        self.rank = comm.Get_rank()
        self.myrow, self.mycol = divmod(self.rank, npcol)
        # Rank within row_comm == mycol and within col_comm == myrow (the keys), so a grid
        # coordinate can be used directly as the root of a row / column collective.
        self.row_comm = comm.Split(color=self.myrow, key=self.mycol)
        self.col_comm = comm.Split(color=self.mycol, key=self.myrow)

    @property
    def shape(self):
        return self.nprow, self.npcol

    @property
    def size(self):
        return self.nprow * self.npcol

    def rank_of(self, prow, pcol):
        return prow * self.npcol + pcol

    def free(self):
        """Release the sub-communicators (call before MPI finalizes if grids are created often)."""
        for sub in (self.row_comm, self.col_comm):
            sub.Free()

    def __repr__(self):
        return f"ProcessGrid({self.nprow}x{self.npcol}, rank {self.rank} at ({self.myrow},{self.mycol}))"
