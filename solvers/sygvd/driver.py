"""sygvd: the distributed generalized symmetric-definite eigensolver (driver).

    potrf  B = L Lᵀ                     (uplo='U' is first transposed to the lower triangle)
    sygst  C = L⁻¹ A L⁻ᵀ  or  Lᵀ A L     (by itype)
    sytrd  C = Q T Qᵀ
    stevd  T = Y Λ Yᵀ                     (tridiagonal.py)
    ormtr  Y ← Q Y
    trsm   Z = L⁻ᵀ Y (itype 1, 2)  or  trmm  Z = L Y (itype 3)

Inputs and outputs are DistMatrix objects in the user's ScaLAPACK layout; every stage runs in a
``coll.stage`` block so the report shows where time and messages go. Input errors are decided
collectively before any numerical work, so they are raised identically on every rank.
"""
from ..distributed.redistribute import lower_triangle, symmetrize
from ..errors import InputError
from ..ormtr import ormtr
from ..potrf import potrf
from ..sygst import sygst
from ..sytrd import sytrd
from ..tridiagonal import stevd
from ..trsm import trmm, trsm


def sygvd(a, b, coll, itype=1, jobz="V", uplo="L", check_finite=True):
    """Solve the generalized (or, with b=None, standard) symmetric eigenproblem.

    a, b: DistMatrix (square, same shape, same nb and grid); only the ``uplo`` triangle of each
    is read. Returns (w, z): w the ascending eigenvalues on every rank (an array of the
    backend), z a DistMatrix with a's layout holding the eigenvectors as columns
    (B-orthonormal for itypes 1, 2; B⁻¹-orthonormal for itype 3), or None for jobz='N'.
    Raises InputError or NotPositiveDefiniteError — on every rank alike.
    """
    _validate_arguments(a, b, itype, jobz, uplo)
    lower = uplo.upper() == "L"
    if check_finite:
        with coll.stage("validate"):
            for name, mat in (("A", a), ("B", b)):
                if mat is not None and coll.any_flag(not mat.referenced_finite(lower)):
                    raise InputError(f"{name} has NaN or Inf in its referenced "
                                     f"({'lower' if lower else 'upper'}) triangle")
    if b is not None:
        with coll.stage("potrf"):
            lfac = potrf(lower_triangle(b, lower, coll), coll)
        with coll.stage("sygst"):
            c = sygst(a, lower, lfac, itype, coll)
    else:
        with coll.stage("sygst"):      # standard problem: only the mirror of the triangle
            c = symmetrize(a, lower, coll)
    with coll.stage("sytrd"):
        d, e, tau = sytrd(c, coll)
    vectors = jobz.upper() == "V"
    with coll.stage("tridiagonal"):
        w, z = stevd(d, e, coll, vectors_like=c if vectors else None)
    if not vectors:
        return w, None
    with coll.stage("ormtr"):
        ormtr(c, tau, z, coll)
    if b is not None:
        with coll.stage("trsm"):
            if itype == 3:
                trmm(lfac, z, coll)
            else:
                trsm(lfac, z, coll, trans=True)
    return w, z


def _validate_arguments(a, b, itype, jobz, uplo):
    """Checks on arguments every rank holds alike (no communication needed)."""
    if itype not in (1, 2, 3):
        raise InputError(f"itype must be 1, 2 or 3, got {itype!r}")
    if str(jobz).upper() not in ("N", "V"):
        raise InputError(f"jobz must be 'N' or 'V', got {jobz!r}")
    if str(uplo).upper() not in ("L", "U"):
        raise InputError(f"uplo must be 'L' or 'U', got {uplo!r}")
    m, n = a.shape
    if m != n:
        raise InputError(f"A must be square, got {m}x{n}")
    if a.desc.mb != a.desc.nb or a.desc.rsrc or a.desc.csrc:
        raise InputError("A must use square blocks (mb == nb) starting on process (0, 0)")
    if b is not None:
        if b.shape != a.shape:
            raise InputError(f"B is {b.shape[0]}x{b.shape[1]} but A is {m}x{n}")
        if b.desc != a.desc or b.grid is not a.grid:
            raise InputError("A and B must share one layout (descriptor and grid)")
        if b.dtype != a.dtype:
            raise InputError(f"A is {a.dtype} but B is {b.dtype}")
