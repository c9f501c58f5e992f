"""Element types and reduction operators: numpy / MPI names ↔ the native codes.

The codes follow native/include/hpcolls/types.h (DType, Op) in the same order.
"""
import numpy as np
from mpi4py import MPI

F16, BF16, F32, F64, C64, C128, I32, I64, U32, U64 = range(10)
NAMES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128",
         "int32", "int64", "uint32", "uint64")
ITEMSIZE = (2, 2, 4, 8, 8, 16, 4, 8, 4, 8)
COMPLEX = frozenset((C64, C128))

SUM, PROD, MIN, MAX = range(4)
OP_NAMES = ("sum", "prod", "min", "max")

# numpy dtype -> code. bfloat16 has no numpy dtype of its own; ml_dtypes' is matched by name.
_NUMPY_CODES = {np.dtype(name): code for code, name in enumerate(NAMES) if name != "bfloat16"}

# MPI predefined datatypes by their typechar (mpi4py): 'l'/'L' are C long, 64-bit on LP64.
_MPI_TYPECHAR_CODES = {"f": F32, "d": F64, "F": C64, "D": C128, "i": I32, "I": U32,
                       "l": I64, "L": U64, "q": I64, "Q": U64, "e": F16}

_MPI_OPS = ((MPI.SUM, SUM), (MPI.PROD, PROD), (MPI.MIN, MIN), (MPI.MAX, MAX))  # in code order


def code_of_numpy(dtype):
    """Native code of a numpy(-like) dtype, or None when the native path does not carry it."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        return None
    code = _NUMPY_CODES.get(dtype)
    if code is None and dtype.name == "bfloat16":
        return BF16
    return code


def code_of_mpi(datatype):
    """Native code of a predefined MPI datatype, or None (derived types, MPI.BYTE, ...)."""
    try:
        char = datatype.typechar
    except Exception:  # noqa: BLE001 - mpi4py raises for types it has no typechar for
        return None
    return _MPI_TYPECHAR_CODES.get(char)


def mpi_ops_by_code():
    """MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX, indexed by their native codes."""
    return tuple(op for op, _ in _MPI_OPS)


def numpy_code_pairs():
    """(numpy dtype, code) for every type with a numpy dtype: the native fast Allreduce matches
    array dtypes against these by identity."""
    return tuple(_NUMPY_CODES.items())


def op_code(op):
    """Native code of MPI.SUM/PROD/MIN/MAX, or None for any other MPI.Op."""
    for mpi_op, code in _MPI_OPS:
        if op is mpi_op:
            return code
    for mpi_op, code in _MPI_OPS:
        if op == mpi_op:
            return code
    return None


def numpy_dtype(code):
    """numpy dtype used to hold a code's elements on the host (bfloat16 travels as uint16)."""
    return np.dtype(np.uint16) if code == BF16 else np.dtype(NAMES[code])
