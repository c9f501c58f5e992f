"""Element types and reduction operators: numpy / MPI names ↔ the native codes.

The codes follow native/include/hpcolls/types.h (DType, Op) in the same order.
"""
import numpy as np
from mpi4py import MPI

F16, BF16, F32, F64, C64, C128, I32, I64, U32, U64, I8, U8, I16, U16, BOOL = range(15)
NAMES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128",
         "int32", "int64", "uint32", "uint64", "int8", "uint8", "int16", "uint16", "bool")
ITEMSIZE = (2, 2, 4, 8, 8, 16, 4, 8, 4, 8, 1, 1, 2, 2, 1)
COMPLEX = frozenset((C64, C128))
FLOATING = frozenset((F16, BF16, F32, F64))
INTEGER = frozenset((I8, U8, I16, U16, I32, U32, I64, U64))

SUM, PROD, MIN, MAX, BAND, BOR, BXOR, LAND, LOR, LXOR = range(10)
OP_NAMES = ("sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor", "lxor")
# The ops the native kernels carry per type, as MPI defines them (types.h, op_supported): MPI
# itself rejects the others (MPI_ERR_OP), e.g. BAND on MPI.C_BOOL or on a floating-point type.
OPS_OF = {code: (frozenset((SUM, PROD)) if code in COMPLEX
                 else frozenset((SUM, PROD, MIN, MAX)) if code in FLOATING
                 else frozenset((LAND, LOR, LXOR)) if code == BOOL
                 else frozenset(range(len(OP_NAMES))))
          for code in range(len(NAMES))}

# numpy dtype -> code. bfloat16 has no numpy dtype of its own; ml_dtypes' is matched by name.
_NUMPY_CODES = {np.dtype(name): code for code, name in enumerate(NAMES) if name != "bfloat16"}

# MPI predefined datatypes by their typechar (mpi4py): 'l'/'L' are C long, 64-bit on LP64.
# 'b'/'B': signed/unsigned char and (u)int8_t; 'h'/'H': short and (u)int16_t; '?': C and C++ bool.
# MPI.BYTE shares 'B' with MPI.UNSIGNED_CHAR but is not a number: code_of_mpi leaves it out.
_MPI_TYPECHAR_CODES = {"f": F32, "d": F64, "F": C64, "D": C128, "i": I32, "I": U32,
                       "l": I64, "L": U64, "q": I64, "Q": U64, "e": F16,
                       "b": I8, "B": U8, "h": I16, "H": U16, "?": BOOL}

_MPI_OPS = ((MPI.SUM, SUM), (MPI.PROD, PROD), (MPI.MIN, MIN), (MPI.MAX, MAX),
            (MPI.BAND, BAND), (MPI.BOR, BOR), (MPI.BXOR, BXOR),
            (MPI.LAND, LAND), (MPI.LOR, LOR), (MPI.LXOR, LXOR))  # in code order


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
    if char == "B" and datatype == MPI.BYTE:
        return None
    return _MPI_TYPECHAR_CODES.get(char)


def mpi_ops_by_code():
    """MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX, MPI.BAND, ..., MPI.LXOR, indexed by their native codes."""
    return tuple(op for op, _ in _MPI_OPS)


def numpy_code_pairs():
    """(numpy dtype, code) for every type with a numpy dtype: the native fast Allreduce matches
    array dtypes against these by identity."""
    return tuple(_NUMPY_CODES.items())


def op_code(op):
    """Native code of MPI.SUM/PROD/MIN/MAX/BAND/BOR/BXOR/LAND/LOR/LXOR, or None for any other
    MPI.Op (MINLOC, MAXLOC, REPLACE, NO_OP, user-defined)."""
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
