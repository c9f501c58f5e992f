"""syevd / heevd: the distributed standard symmetric (real) / Hermitian (complex) eigensolver.

    validate        non-finite entries in A's referenced triangle (check_finite)
    sytrd | hetrd   the full matrix from A's referenced triangle, scaled into LAPACK's range
                    where its largest entry is not (scaling.py), then Qᴴ A Q = T
    stedc | sterf   T = Y Λ Yᵀ (real, replicated; sterf when only eigenvalues are wanted)
      or, for a subset (subset.py, stevr.py):
    stebz           which eigenpairs; their eigenvalues by bisection, each rank a share (stebz.py)
    stemr           their eigenvectors by MRRR, each rank a group, into Y's layout (stemr.py)
      (or stedc | sterf of all of them, the wanted kept: at larger k, and in GPU runs)
    ormtr | unmtr   Z = Q Y            (on the k wanted columns only)

or, with reduction='2stage' (reduction.py), in place of sytrd and ormtr:
    sy2sb | he2hb   Q1ᴴ C Q1 = B, bandwidth b (sy2sb.py: panel QR + GEMM two-sided updates)
    sb2st | hb2st   Q2ᴴ B Q2 = T by bulge chasing (sb2st.py; every rank chases the same band)
    (stedc, or stebz + stemr, as above: each rank's columns of Y kept whole)
    ormtr_sb2st     Y ← Q2 Y on each rank's whole columns (ormtr_sb2st.py, no messages), then
                    one Alltoallv into the block-cyclic layout
    ormtr_sy2sb     Z = Q1 Y  (ormtr.py with the reflectors b rows below the diagonal)

Stages are named as LAPACK names them for the dtype (lapack_names.py). By ``method``
(method.py) the whole problem may instead be one LAPACK / cuSOLVER syevd / heevd call on one
rank (single.py): one stage, named for that call. sygvd runs this driver on the matrix hegst
made (as SLATE's hegv runs heev).
"""
import numpy as np

from .arguments import check_finite as check_finite_inputs
from .arguments import validate_arguments
from .backend.arrays import is_numpy
from .backend.threads import policy_for
from .distributed.columns import columns_to_block_cyclic
from .distributed.redistribute import symmetrize
from .lapack_names import lapack_name
from .method import choose_method
from .ormtr import ormtr
from .ormtr_sb2st import ormtr_sb2st
from .reduction import band_for, choose_reduction
from .sb2st import sb2st
from .scaling import scale_into_range
from .single import single_distributed
from .subset import EigenRange
from .sy2sb import sy2sb
from .sytrd import sytrd
from .stevd import stevd, stevd_columns, vectors_by
from .stevr import stevr


def syevd(a, coll, jobz="V", uplo="L", check_finite=True, method="auto", subset=None,
          reduction="auto", band=None, tridiagonal="auto", overwrite_a=False):
    """Eigenvalues (ascending, an array of the backend on every rank) and, for jobz='V',
    eigenvectors (a DistMatrix in A's layout, orthonormal columns) of the symmetric / Hermitian
    DistMatrix ``a``, of which only the ``uplo`` triangle is read. Returns (w, Z or None).
    ``subset`` (an EigenRange; default all) selects the eigenpairs: then w has k entries and Z
    is n × k, in A's block size and grid. ``reduction`` ('auto', '1stage', '2stage';
    reduction.py) and ``band`` (two-stage's bandwidth, a divisor of A's nb; default
    reduction.BAND_TARGET) choose the reduction to tridiagonal form. ``tridiagonal`` ('auto',
    'rows', 'replicated'; stevd.vectors_by): how divide and conquer makes the
    tridiagonal's eigenvectors over the ranks ('replicated' is for measuring). ``overwrite_a``
    (as scipy's): ``a`` may be destroyed, which saves an n × n temporary on one rank."""
    subset = subset or EigenRange.all()
    validate_arguments(a, None, 1, jobz, uplo)
    subset.check(a.shape[0])
    policy_for(a.grid.comm)   # the CLI's BLAS threads per rank, whichever way the solver is entered
    lower, vectors = uplo.upper() == "L", jobz.upper() == "V"
    on_gpu = not is_numpy(a.xp)
    chosen, why = choose_method(method, a.shape[0], a.grid.size, on_gpu)
    reduced_by, reduction_why = choose_reduction(reduction, a.shape[0], on_gpu, np.dtype(a.dtype).kind == "c")
    band = band_for(band, a.nb, on_gpu)
    vectors_by(tridiagonal, a.grid.size)                  # a bad name fails before any work
    if check_finite:
        with coll.stage("validate"):
            check_finite_inputs(coll, lower, A=a)
    if chosen == "single":
        return single_distributed(a, None, coll, 1, vectors, lower, why, subset)
    if reduced_by == "2stage":
        w, z, sigma = _two_stage(a, coll, lower, vectors, subset, band, reduction_why, tridiagonal,
                                 overwrite_a)
    else:
        w, z, sigma = _one_stage(a, coll, lower, vectors, subset, tridiagonal, overwrite_a)
    return (w if sigma == 1.0 else w / sigma), z


def _standard_matrix(a, lower, coll, subset, overwrite):
    """(C, σ, the subset for C): the whole matrix from A's referenced triangle, scaled into
    LAPACK's range (scaling.py); in A's own storage where ``overwrite`` allows."""
    c = symmetrize(a, lower, coll, overwrite)
    sigma = scale_into_range(c, coll)
    return c, sigma, subset.scaled(sigma)


def _one_stage(a, coll, lower, vectors, subset, tridiagonal, overwrite):
    """syevd's stages with the one-stage reduction: (w of the scaled matrix, Z, σ)."""
    with coll.stage(lapack_name("sytrd", a.dtype)):
        c, sigma, subset = _standard_matrix(a, lower, coll, subset, overwrite)
        d, e, tau = sytrd(c, coll)
    if subset.is_all:
        with coll.stage("stedc" if vectors else "sterf"):
            w, z = stevd(d, e, coll, c if vectors else None, tridiagonal=tridiagonal)
    else:
        w, z = stevr(d, e, subset, c, coll, vectors, tridiagonal=tridiagonal)
    if vectors:
        with coll.stage(lapack_name("ormtr", a.dtype)):
            ormtr(c, tau, z, coll)
    return w, z, sigma


def _two_stage(a, coll, lower, vectors, subset, band, why, tridiagonal, overwrite):
    """syevd's stages with the two-stage reduction (see the module's docstring): (w of the
    scaled matrix, Z, σ)."""
    n, dtype, xp = a.shape[0], a.dtype, a.xp
    with coll.stage(lapack_name("sy2sb", dtype)):
        coll.note("reduction", f"2stage [{why}]")
        c, sigma, subset = _standard_matrix(a, lower, coll, subset, overwrite)
        ab, tau = sy2sb(c, coll, band)
    with coll.stage(lapack_name("sb2st", dtype)):
        d, e, q2 = sb2st(ab, band, coll, vectors)
    if subset.is_all:
        with coll.stage("stedc" if vectors else "sterf"):
            if not vectors:
                return (*stevd(d, e, coll), sigma)
            w, columns = stevd_columns(d, e, coll, tridiagonal=tridiagonal)
    else:
        w, columns = stevr(d, e, subset, c, coll, vectors, whole_columns=True, tridiagonal=tridiagonal)
        if not vectors:
            return w, None, sigma
    with coll.stage(lapack_name("ormtr_sb2st", dtype)):
        mine = ormtr_sb2st(q2, columns.mine, coll=coll)
        z = columns_to_block_cyclic(mine, columns.bounds, columns.place, n, w.shape[0], a.nb,
                                    a.grid, coll, dtype, xp)
        del q2, columns, mine      # n × k each: not held through Q1
    with coll.stage(lapack_name("ormtr_sy2sb", dtype)):
        ormtr(c, tau, z, coll, offset=band)
    return w, z, sigma
