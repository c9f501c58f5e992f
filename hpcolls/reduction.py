"""Rank-order reduction on the host, with exactly the native kernels' semantics.

Used by the MPI fallback for types MPI has no datatype for (float16, bfloat16), by the
hierarchical path's combine across nodes (hpcolls/hierarchy/path.py) and by the tests as
the reference: reduce(x0, x1, ..., xN-1) applied left to right, one rounding per step;
MIN/MAX propagate the first NaN and keep the earlier value on ties (-0.0 vs +0.0); complex
PROD is (ar*br - ai*bi) + (ar*bi + ai*br)i with each product rounded; integers wrap; the
bitwise ops act on the bits, the logical ones give 0 or 1 in the operands' type (as MPI's do).
bfloat16 travels as uint16 bit patterns and is computed in float32, rounded to nearest even
after every step (float32 holds every bfloat16 sum/product exactly enough that this equals a
correctly rounded bfloat16 operation).
"""
import numpy as np

from . import dtypes


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(values):
    u = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rounded)


# numpy's bitwise and logical ufuncs: MPI's BAND ... LXOR on integers and booleans.
_BITWISE_STEPS = {dtypes.BAND: np.bitwise_and, dtypes.BOR: np.bitwise_or, dtypes.BXOR: np.bitwise_xor,
                  dtypes.LAND: np.logical_and, dtypes.LOR: np.logical_or, dtypes.LXOR: np.logical_xor}


def _real_step(op, a, b):
    if op == dtypes.SUM:
        return a + b
    if op == dtypes.PROD:
        return a * b
    if op not in (dtypes.MIN, dtypes.MAX):
        raise ValueError(f"hpcolls: the host reduction implements SUM, PROD, MIN, MAX and the bitwise and logical ops, not "
                         f"{dtypes.OP_NAMES[op].upper() if 0 <= op < len(dtypes.OP_NAMES) else op}")
    better = (b < a) if op == dtypes.MIN else (a < b)
    if a.dtype.kind in "fc":
        return np.where(np.isnan(a), a, np.where(np.isnan(b) | better, b, a))
    return np.where(better, b, a)


def _complex_step(op, a, b):
    if op == dtypes.SUM:
        return a + b
    if op != dtypes.PROD:
        raise ValueError("hpcolls: MIN/MAX are not defined for complex numbers")
    out = np.empty_like(a)
    out.real = a.real * b.real - a.imag * b.imag
    out.imag = a.real * b.imag + a.imag * b.real
    return out


def step(code, op, a, b):
    """One reduction step acc = op(a, b) on host arrays holding `code` elements."""
    if op in _BITWISE_STEPS:
        if code not in dtypes.INTEGER and code != dtypes.BOOL:
            raise ValueError(f"hpcolls: {dtypes.OP_NAMES[op].upper()} is not defined for {dtypes.NAMES[code]}")
        return _BITWISE_STEPS[op](a, b).astype(a.dtype, copy=False)
    if code == dtypes.BF16:
        return f32_to_bf16(_real_step(op, bf16_to_f32(a), bf16_to_f32(b)))
    if code in dtypes.COMPLEX:
        return _complex_step(op, a, b)
    with np.errstate(over="ignore", invalid="ignore"):
        return _real_step(op, a, b).astype(a.dtype, copy=False)


def reduce_in_rank_order(code, op, contributions):
    """contributions[r] is rank r's host array; returns the reduction in rank order."""
    acc = np.array(contributions[0], copy=True)
    for x in contributions[1:]:
        acc = step(code, op, acc, x)
    return acc
