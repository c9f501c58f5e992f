"""Checks the drivers (syevd, sygvd) make before any numerical work, identically on every rank."""
from .errors import InputError

DTYPES = ("float32", "float64", "complex64", "complex128")


def validate_arguments(a, b, itype, jobz, uplo):
    """Checks on arguments every rank holds alike (no communication needed)."""
    if itype not in (1, 2, 3):
        raise InputError(f"itype must be 1, 2 or 3, got {itype!r}")
    if str(jobz).upper() not in ("N", "V"):
        raise InputError(f"jobz must be 'N' or 'V', got {jobz!r}")
    if str(uplo).upper() not in ("L", "U"):
        raise InputError(f"uplo must be 'L' or 'U', got {uplo!r}")
    if a.dtype.name not in DTYPES:
        raise InputError(f"A is {a.dtype}: the solver takes {', '.join(DTYPES)}")
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


def check_finite(coll, lower, **matrices):
    """InputError on every rank if any rank holds a NaN or Inf in the referenced triangle of one
    of ``matrices`` (name → DistMatrix or None); one flag reduction per matrix."""
    for name, mat in matrices.items():
        if mat is not None and coll.any_flag(not mat.referenced_finite(lower)):
            raise InputError(f"{name} has NaN or Inf in its referenced "
                             f"({'lower' if lower else 'upper'}) triangle")
