"""sygvd / hegvd: the distributed generalized symmetric- / Hermitian-definite eigensolver.

    validate        non-finite entries in the referenced triangles of A and B (check_finite)
    potrf           B = L Lᴴ                  (uplo='U' is first conjugate-transposed to lower)
    sygst | hegst   C = L⁻¹ A L⁻ᴴ  or  Lᴴ A L  (by itype)
    syevd | heevd   C = Y Λ Yᴴ                (syevd.py: sytrd/hetrd, stedc or stebz + stemr,
                                              ormtr/unmtr; or two-stage: sy2sb, sb2st, ...,
                                              ormtr_sb2st, ormtr_sy2sb)
    trsm            Z = L⁻ᴴ Y (itype 1, 2)  or  trmm  Z = L Y (itype 3), on Y's k columns

With ``b_factored`` B is given as its Cholesky factor (potrf's output: L in B's lower triangle
for uplo='L', U = Lᴴ in its upper one for 'U'; solvers.cholesky makes one) and potrf is skipped:
one factor serves many A.

Inputs and outputs are DistMatrix objects in the user's ScaLAPACK layout; every stage runs in a
``coll.stage`` block named as LAPACK names it for the dtype, so the report shows where time and
messages go. By ``method`` (plan.py) the whole problem may instead be one LAPACK / cuSOLVER
call on one rank (single.py). Input errors are decided collectively before any numerical work,
so they are raised identically on every rank.

``python -m solvers.sygvd`` runs the command line (solvers/cli) from this module.
"""
import sys

from .agreement import Agreement, layout
from .arguments import check_finite as check_finite_inputs
from .arguments import validate_arguments
from .distributed.redistribute import lower_triangle
from .errors import InputError
from .lapack_names import lapack_name
from .plan import plan_for
from .potrf import potrf
from .single import single_distributed
from .subset import EigenRange
from .sygst import sygst
from .syevd import solve_standard
from .trsm import trmm, trsm


def sygvd(a, b, coll, itype=1, jobz="V", uplo="L", check_finite=True, method="auto",
          subset=None, b_factored=False, reduction="auto", band=None, tridiagonal="auto", *,
          plan=None):
    """Solve the generalized (or, with b=None, standard: syevd) symmetric / Hermitian
    eigenproblem.

    a, b: DistMatrix (square, same shape, same nb and grid, float32, float64, complex64 or
    complex128); only the ``uplo`` triangle of each is read, and the imaginary parts of their
    diagonals are ignored. Returns (w, z): w the ascending eigenvalues on every rank (an array
    of the backend, of the real dtype), z a DistMatrix with a's layout holding the eigenvectors
    as columns (B-orthonormal for itypes 1, 2; B⁻¹-orthonormal for itype 3), or None for
    jobz='N'. ``subset`` (subset.EigenRange: all, by index il..iu 1-based, by value (vl, vu])
    selects the eigenpairs (w has k entries, z is n × k); ``b_factored``: b holds B's Cholesky
    factor in its ``uplo`` triangle (see above). ``method`` (plan.METHODS but 'replicated'),
    ``reduction`` ('auto', '1stage', '2stage') and ``band`` choose how it is solved and the
    reduction to tridiagonal form, ``tridiagonal`` ('auto', 'rows', 'replicated') how its
    eigenvectors are made over the ranks (solvers/plan.py); or ``plan``, a SolverPlan an entry
    above resolved (solvers.eigh, the command line, the bench), gives them all. The ranks
    compare their arguments and layouts first (agreement.py). Raises InputError (a difference
    between the ranks: RankMismatchError) or NotPositiveDefiniteError — on every rank alike.
    """
    requested = dict(method=method, reduction=reduction, band=band, tridiagonal=tridiagonal)
    subset = subset or EigenRange.all()
    with Agreement(a.grid.comm, "sygvd") as call:
        call.record(a=layout(a), b=layout(b), itype=itype, jobz=jobz, uplo=uplo,
                    check_finite=check_finite, subset=subset, b_factored=b_factored, **requested)
        if b is None and b_factored:
            raise InputError("b_factored=True needs b (the Cholesky factor of B)")
        validate_arguments(a, b, itype, jobz, uplo)
        subset.check(a.shape[0])
        plan = plan_for(a, plan, b_factored=b_factored, **requested)    # bad arguments fail first
    lower, vectors = uplo.upper() == "L", jobz.upper() == "V"
    if b is None:
        return solve_standard(a, coll, lower, vectors, check_finite, subset, plan, overwrite_a=False)
    if check_finite:
        with coll.stage("validate"):
            check_finite_inputs(coll, lower, A=a, B=b)
    if plan.method == "single":
        return single_distributed(a, b, coll, itype, vectors, lower, plan, subset)
    if b_factored:
        lfac = lower_triangle(b, lower, coll)
    else:
        with coll.stage("potrf"):
            lfac = potrf(lower_triangle(b, lower, coll), coll)
    with coll.stage(lapack_name("sygst", a.dtype)):
        c = sygst(a, lower, lfac, itype, coll, method=plan.sygst_one_rank)
    w, z = solve_standard(c, coll, True, vectors, False, subset, plan,
                          overwrite_a=True)     # C is this driver's own: its storage becomes syevd's
    del c
    if vectors:
        with coll.stage("trsm"):
            if itype == 3:
                trmm(lfac, z, coll)
            else:
                trsm(lfac, z, coll, trans=True)
    return w, z


if __name__ == "__main__":
    # python -m solvers.sygvd: the command line, imported only when run as one.
    from .cli.main import main
    sys.exit(main())
