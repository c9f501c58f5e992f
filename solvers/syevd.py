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

or, with reduction='2stage' (plan.py), in place of sytrd and ormtr:
    sy2sb | he2hb   Q1ᴴ C Q1 = B, bandwidth b (sy2sb.py: panel QR + GEMM two-sided updates)
    sb2st | hb2st   Q2ᴴ B Q2 = T by bulge chasing (sb2st.py; every rank chases the same band)
    (stedc, or stebz + stemr, as above: each rank's columns of Y kept whole)
    ormtr_sb2st     Y ← Q2 Y on each rank's whole columns (ormtr_sb2st.py, no messages), then
                    one Alltoallv into the block-cyclic layout
    ormtr_sy2sb     Z = Q1 Y  (ormtr.py with the reflectors b rows below the diagonal)

Stages are named as LAPACK names them for the dtype (lapack_names.py). By ``method``
(plan.py) the whole problem may instead be one LAPACK / cuSOLVER syevd / heevd call on one
rank (single.py): one stage, named for that call. sygvd runs this driver on the matrix hegst
made (as SLATE's hegv runs heev).
"""
from .agreement import Agreement, layout
from .arguments import check_finite as check_finite_inputs
from .arguments import validate_arguments
from .distributed.columns import columns_to_block_cyclic
from .distributed.redistribute import symmetrize
from .lapack_names import lapack_name
from .ormtr import ormtr
from .ormtr_sb2st import ormtr_sb2st
from .plan import plan_for
from .sb2st import sb2st
from .scaling import scale_into_range
from .single import single_distributed
from .stevd import stevd, stevd_columns
from .stevr import stevr
from .subset import EigenRange
from .sy2sb import sy2sb
from .sytrd import sytrd


def syevd(a, coll, jobz="V", uplo="L", check_finite=True, method="auto", subset=None,
          reduction="auto", band=None, tridiagonal="auto", overwrite_a=False, *, plan=None):
    """Eigenvalues (ascending, an array of the backend on every rank) and, for jobz='V',
    eigenvectors (a DistMatrix in A's layout, orthonormal columns) of the symmetric / Hermitian
    DistMatrix ``a``, of which only the ``uplo`` triangle is read. Returns (w, Z or None).
    ``subset`` (an EigenRange; default all) selects the eigenpairs: then w has k entries and Z
    is n × k, in A's block size and grid. ``method`` (plan.METHODS but 'replicated'),
    ``reduction`` ('auto', '1stage', '2stage') and ``band`` (two-stage's bandwidth, a divisor of
    A's nb; default plan.band_for's) choose how it is solved, ``tridiagonal`` ('auto', 'rows',
    'replicated'; plan.vectors_by) how divide and conquer makes the tridiagonal's eigenvectors
    over the ranks ('replicated' is for measuring); or ``plan``, a SolverPlan an entry above
    resolved (solvers/plan.py), gives them all. ``overwrite_a`` (as scipy's): ``a`` may be
    destroyed, which saves an n × n temporary on one rank. The ranks compare their arguments
    and layouts first (agreement.py): a difference, or an error of one rank's checks, raises
    the same InputError on every rank."""
    subset = subset or EigenRange.all()
    with Agreement(a.grid.comm, "syevd") as call:
        call.record(a=layout(a), jobz=jobz, uplo=uplo, check_finite=check_finite, method=method,
                    subset=subset, reduction=reduction, band=band, tridiagonal=tridiagonal,
                    overwrite_a=overwrite_a)
        validate_arguments(a, None, 1, jobz, uplo)
        subset.check(a.shape[0])
        plan = plan_for(a, plan, method=method, reduction=reduction, band=band, tridiagonal=tridiagonal)
    return solve_standard(a, coll, uplo.upper() == "L", jobz.upper() == "V", check_finite, subset,
                          plan, overwrite_a)


def solve_standard(a, coll, lower, vectors, check_finite, subset, plan, overwrite_a):
    """syevd's work after its checks, for a driver that made them (sygvd)."""
    if check_finite:
        with coll.stage("validate"):
            check_finite_inputs(coll, lower, A=a)
    if plan.method == "single":
        return single_distributed(a, None, coll, 1, vectors, lower, plan, subset)
    stages = _two_stage if plan.reduction == "2stage" else _one_stage
    w, z, sigma = stages(a, coll, lower, vectors, subset, plan, overwrite_a)
    return (w if sigma == 1.0 else w / sigma), z


def _standard_matrix(a, lower, coll, subset, overwrite):
    """(C, σ, the subset for C): the whole matrix from A's referenced triangle, scaled into
    LAPACK's range (scaling.py); in A's own storage where ``overwrite`` allows."""
    c = symmetrize(a, lower, coll, overwrite)
    sigma = scale_into_range(c, coll)
    return c, sigma, subset.scaled(sigma)


def _one_stage(a, coll, lower, vectors, subset, plan, overwrite):
    """syevd's stages with the one-stage reduction: (w of the scaled matrix, Z, σ)."""
    with coll.stage(lapack_name("sytrd", a.dtype)):
        c, sigma, subset = _standard_matrix(a, lower, coll, subset, overwrite)
        d, e, tau = sytrd(c, coll, product=plan.sytrd_product, loop=plan.sytrd_loop, profile=plan.sytrd_profile)
    if subset.is_all:
        with coll.stage("stedc" if vectors else "sterf"):
            w, z = stevd(d, e, coll, c if vectors else None, plan=plan)
    else:
        w, z = stevr(d, e, subset, c, coll, vectors, plan=plan)
    if vectors:
        with coll.stage(lapack_name("ormtr", a.dtype)):
            ormtr(c, tau, z, coll)
    return w, z, sigma


def _two_stage(a, coll, lower, vectors, subset, plan, overwrite):
    """syevd's stages with the two-stage reduction (see the module's docstring): (w of the
    scaled matrix, Z, σ)."""
    n, dtype, xp, band = a.shape[0], a.dtype, a.xp, plan.band
    with coll.stage(lapack_name("sy2sb", dtype)):
        coll.note("reduction", f"2stage [{plan.reduction_why}]")
        c, sigma, subset = _standard_matrix(a, lower, coll, subset, overwrite)
        ab, tau = sy2sb(c, coll, band, chunk=plan.sy2sb_chunk, panel=plan.panel)
    with coll.stage(lapack_name("sb2st", dtype)):
        d, e, q2 = sb2st(ab, band, coll, vectors)
    if subset.is_all:
        with coll.stage("stedc" if vectors else "sterf"):
            if not vectors:
                return (*stevd(d, e, coll, plan=plan), sigma)
            w, columns = stevd_columns(d, e, coll, plan=plan)
    else:
        w, columns = stevr(d, e, subset, c, coll, vectors, whole_columns=True, plan=plan)
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
