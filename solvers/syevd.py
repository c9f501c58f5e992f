"""syevd / heevd: the distributed standard symmetric (real) / Hermitian (complex) eigensolver.

    validate        non-finite entries in A's referenced triangle (check_finite)
    sytrd | hetrd   the full matrix from A's referenced triangle, then Qᴴ A Q = T
    stedc | sterf   T = Y Λ Yᵀ (real, replicated; sterf when only eigenvalues are wanted)
      or, for a subset (subset.py, tridiagonal_subset.py):
    stebz           which eigenpairs; their eigenvalues by bisection, each rank a share (stebz.py)
    stemr           their eigenvectors by MRRR, each rank a group, into Y's layout (stemr.py)
      (or stedc | sterf of all of them, the wanted kept: at larger k, and in GPU runs)
    ormtr | unmtr   Z = Q Y            (on the k wanted columns only)

Stages are named as LAPACK names them for the dtype (lapack_names.py). By ``method``
(method.py) the whole problem may instead be one LAPACK / cuSOLVER syevd / heevd call on one
rank (single.py): one stage, named for that call. sygvd runs this driver on the matrix hegst
made (as SLATE's hegv runs heev).
"""
from .arguments import check_finite as check_finite_inputs
from .arguments import validate_arguments
from .backend.arrays import is_numpy
from .backend.threads import policy_for
from .distributed.redistribute import symmetrize
from .lapack_names import lapack_name
from .method import choose_method
from .ormtr import ormtr
from .single import single_distributed
from .subset import EigenRange
from .sytrd import sytrd
from .tridiagonal import stevd
from .tridiagonal_subset import tridiagonal_subset


def syevd(a, coll, jobz="V", uplo="L", check_finite=True, method="auto", subset=None):
    """Eigenvalues (ascending, an array of the backend on every rank) and, for jobz='V',
    eigenvectors (a DistMatrix in A's layout, orthonormal columns) of the symmetric / Hermitian
    DistMatrix ``a``, of which only the ``uplo`` triangle is read. Returns (w, Z or None).
    ``subset`` (an EigenRange; default all) selects the eigenpairs: then w has k entries and Z
    is n × k, in A's block size and grid."""
    subset = subset or EigenRange.all()
    validate_arguments(a, None, 1, jobz, uplo)
    subset.check(a.shape[0])
    policy_for(a.grid.comm)   # the CLI's BLAS threads per rank, whichever way the solver is entered
    lower, vectors = uplo.upper() == "L", jobz.upper() == "V"
    chosen, why = choose_method(method, a.shape[0], a.grid.size, not is_numpy(a.xp))
    if check_finite:
        with coll.stage("validate"):
            check_finite_inputs(coll, lower, A=a)
    if chosen == "single":
        return single_distributed(a, None, coll, 1, vectors, lower, why, subset)
    with coll.stage(lapack_name("sytrd", a.dtype)):
        c = symmetrize(a, lower, coll)
        d, e, tau = sytrd(c, coll)
    if subset.is_all:
        with coll.stage("stedc" if vectors else "sterf"):
            w, z = stevd(d, e, coll, vectors_like=c if vectors else None)
    else:
        w, z = tridiagonal_subset(d, e, subset, c, coll, vectors)
    if vectors:
        with coll.stage(lapack_name("ormtr", a.dtype)):
            ormtr(c, tau, z, coll)
    return w, z
