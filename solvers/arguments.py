"""Checks the entries make before any numerical work, identically on every rank: the whole-array
entries' (solvers.eigh, solvers.cholesky: shapes, dtypes, the working precision) and the
drivers' on DistMatrix inputs (syevd, sygvd)."""
import numpy as np

from .backend.arrays import array_module
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


def working_arrays(xp, a, b, itype):
    """(a, b, dtype): the inputs checked (no communication: every rank has the same arrays) and
    in the working precision, C-contiguous."""
    if itype not in (1, 2, 3):
        raise ValueError(f"unknown type {itype!r}: must be 1, 2 or 3")
    a = xp.asarray(a)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"expected square 'a' matrix, got shape {a.shape}")
    arrays = [a]
    if b is not None:
        if array_module(b) is not xp:
            raise ValueError("a and b must both be numpy arrays or both cupy arrays")
        b = xp.asarray(b)
        if b.ndim != 2 or b.shape[0] != b.shape[1]:
            raise ValueError(f"expected square 'b' matrix, got shape {b.shape}")
        if b.shape != a.shape:
            raise ValueError(f"wrong b dimensions {b.shape}, should be {a.shape}")
        arrays.append(b)
    for arr in arrays:
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise ValueError(f"unsupported dtype {arr.dtype}")
    dtype = _working_dtype([arr.dtype for arr in arrays])
    a = xp.ascontiguousarray(a, dtype=dtype)
    b = xp.ascontiguousarray(b, dtype=dtype) if b is not None else None
    return a, b, dtype


def _working_dtype(dtypes):
    """The precision scipy's eigh takes for inputs of these dtypes (its LAPACK prefix, as
    scipy.linalg.blas.find_best_blas_type scores them): single for float32 and the types
    narrower than 32 bits (bool, int8, uint8, int16, uint16, float16), double for wider ones,
    complex if any is; complex64 with a double real one is complex128."""
    scores = [_PRECISION_SCORE.get(np.dtype(t).char, 2) for t in dtypes]
    best = max(scores)
    if best == 3 and 2 in scores:
        best = 4
    return np.dtype({1: np.float32, 2: np.float64, 3: np.complex64, 4: np.complex128}[best])


# 1 single, 2 double, 3 single complex, 4 double complex (scipy.linalg.blas's _type_score)
_PRECISION_SCORE = {**{c: 1 for c in "?bBhHef"}, **{c: 2 for c in "iIlLqQdg"}, "F": 3, "D": 4, "G": 4}

def communicator(comm):
    """``comm`` checked to be an mpi4py intracommunicator (an hpcolls.wrap communicator is one),
    or MPI.COMM_WORLD for None: a clear TypeError before anything uses it."""
    from mpi4py import MPI   # here, not at the top: its import initializes MPI (solvers/__init__.py)
    if comm is None:
        return MPI.COMM_WORLD
    if not isinstance(comm, MPI.Intracomm):
        raise TypeError(f"comm must be an mpi4py intracommunicator (MPI.COMM_WORLD, a split of "
                        f"it, hpcolls.wrap(...)), got {type(comm).__name__} {comm!r:.60}")
    return comm
