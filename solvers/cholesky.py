"""``solvers.cholesky``: B's Cholesky factor computed once, for solving many A against it.

An SCF code solves A_k x = λ B x for many A_k with one B (ELPA's is_already_decomposed,
DLA-Future's *_factorized): the factor is computed by the distributed potrf once, kept on the
grid in its block-cyclic layout, and ``solvers.eigh(a, f)`` then skips potrf (the DistMatrix
routine takes it as ``sygvd(a, l, coll, b_factored=True)``).

Under MPI every rank calls ``cholesky`` with the same b (as ``eigh``); each keeps only its
blocks of L. The factor holds its process grid: ``f.free()`` (or ``with solvers.cholesky(b) as
f:``) releases the grid's communicators when it is no longer needed.
"""
from .agreement import Agreement, fingerprint
from .arguments import communicator, working_arrays
from .backend.arrays import array_module, is_numpy
from .backend.collectives import create_collectives
from .backend.threads import policy_for
from .distributed.distmatrix import DistMatrix
from .distributed.grid import ProcessGrid, grid_shape
from .distributed.redistribute import lower_triangle
from .errors import InputError
from .plan import block_size
from .potrf import potrf


class CholeskyFactor:
    """B = L Lᴴ on a process grid: ``factor`` is the DistMatrix of L (lower, block size ``nb``),
    ``grid`` its ProcessGrid, ``collectives`` the transport asked for, ``dtype`` the working
    precision of B; ``to_global()`` gives L whole on every rank."""

    def __init__(self, factor, grid, collectives, owns_grid):
        self.factor = factor
        self.grid = grid
        self.collectives = collectives
        self._owns_grid = owns_grid

    @property
    def shape(self):
        return self.factor.shape

    @property
    def dtype(self):
        return self.factor.dtype

    @property
    def nb(self):
        return self.factor.nb

    @property
    def xp(self):
        return self.factor.xp

    def to_global(self):
        """L (lower triangular, the strict upper triangle zero) whole on every rank."""
        coll = create_collectives(self.grid, self.collectives, self.xp)
        return self.factor.to_global(coll)

    def free(self):
        """Release the grid's communicators (the factor is unusable afterwards)."""
        if self._owns_grid and self.grid is not None:
            self.grid.free()
        self.grid = self.factor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self):
        return f"CholeskyFactor(n={self.shape[0]}, {self.dtype}, nb={self.nb}, grid={self.grid})"


def cholesky(b, *, lower=True, check_finite=True, comm=None, grid=None, nb=None,
             collectives="auto", check_ranks=True):
    """The Cholesky factor of the symmetric / Hermitian positive definite b (whole array, the
    same on every rank; only its ``lower`` (or upper) triangle is read, the imaginary parts of
    its diagonal are ignored), distributed over ``comm`` on ``grid`` in blocks of ``nb``.
    Unlike scipy.linalg.cholesky, which returns an array (upper by default), this returns a
    CholeskyFactor for ``solvers.eigh(a, f)``; ``lower`` has eigh's default and meaning.

    Raises ValueError (shape, NaN/Inf in the referenced triangle; RankMismatchError where the
    ranks were given different b or arguments, compared as solvers.eigh compares them, sampled
    entries with ``check_ranks``) or NotPositiveDefiniteError (potrf's info) on every rank
    alike."""
    comm = communicator(comm)
    with Agreement(comm, "solvers.cholesky") as call:
        call.record(lower=lower, check_finite=check_finite, grid=grid, nb=nb,
                    collectives=collectives, check_ranks=check_ranks)
        xp = array_module(b)
        b, _, _ = working_arrays(xp, b, None, 1)
        call.record(shape=b.shape, dtype=b.dtype.name, arrays=xp.__name__)
        if check_ranks and call.comparing:
            call.record(**{"entries of b": fingerprint(xp, b, lower)})
        n = b.shape[0]
        block = block_size(nb, n, not is_numpy(xp))
        shape = grid_shape(comm.Get_size(), grid)
    policy_for(comm)   # this rank's BLAS threads, as every entry sets them (backend/threads.py)
    pgrid = ProcessGrid(comm, shape)
    try:
        coll = create_collectives(pgrid, collectives, xp)
        db = DistMatrix.from_global(b, pgrid, block)
        if check_finite and coll.any_flag(not db.referenced_finite(lower)):
            raise InputError(f"B has NaN or Inf in its referenced "
                             f"({'lower' if lower else 'upper'}) triangle")
        with coll.stage("potrf"):
            lfac = potrf(lower_triangle(db, lower, coll), coll)
    except BaseException:
        pgrid.free()
        raise
    return CholeskyFactor(lfac, pgrid, collectives, owns_grid=True)
