"""Inputs and references for the GPU AllReduce tests.

Every rank's input is a pure function of (seed, rank, case), so each rank computes the exact
reference for all ranks locally, in rank order, with hpcolls.reduction (numpy) — no
communication in the check itself.
"""
import hashlib

import numpy as np

from hpcolls import dtypes, reduction
from hpcolls.reduction import f32_to_bf16

ALL_CODES = tuple(range(len(dtypes.NAMES)))
ALL_OPS = tuple(range(len(dtypes.OP_NAMES)))
BITWISE_AND_LOGICAL = (dtypes.BAND, dtypes.BOR, dtypes.BXOR, dtypes.LAND, dtypes.LOR, dtypes.LXOR)


def supported(code, op):
    return op in dtypes.OPS_OF[code]


def host_input(code, op, count, seed, rank):
    """Random data for one rank. PROD gets values near 1 (no overflow to inf/0 everywhere);
    integers for the bitwise and logical ops span their whole range, zeros (false) included."""
    rng = np.random.default_rng([seed, rank, code, op, count])
    if code == dtypes.BOOL:
        return rng.integers(0, 2, size=count).astype(np.bool_)
    if code in dtypes.INTEGER:
        info = np.iinfo(dtypes.numpy_dtype(code))
        lo, hi = (-3, 4) if op == dtypes.PROD else (max(info.min, -2**40), min(info.max, 2**40))
        if info.min == 0:
            lo = max(lo, 0)
        values = rng.integers(lo, hi, size=count, dtype=dtypes.numpy_dtype(code), endpoint=False)
        if op in BITWISE_AND_LOGICAL:  # logical ops must see zeros too: one element in four
            values[rng.random(count) < 0.25] = 0
        return values
    real = rng.uniform(0.5, 1.5, count) if op == dtypes.PROD else rng.standard_normal(count) * 100
    if code in dtypes.COMPLEX:
        imag = rng.uniform(-0.5, 0.5, count) if op == dtypes.PROD else rng.standard_normal(count) * 100
        return (real + 1j * imag).astype(dtypes.numpy_dtype(code))
    if code == dtypes.BF16:
        return f32_to_bf16(real.astype(np.float32))
    return real.astype(dtypes.numpy_dtype(code))


# contributions[0] op contributions[1] op ..., left to right (the bitwise and logical ops as
# numpy's ufuncs): the library's own host reference.
reduce_in_rank_order = reduction.reduce_in_rank_order


def reference(code, op, count, seed, nranks):
    return reduce_in_rank_order(code, op, [host_input(code, op, count, seed, r) for r in range(nranks)])


def digest(a):
    """A hash of an array's bytes: ranks compare their results through it."""
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint8).reshape(a.size, -1) if a.size else a.view(np.uint8)


def assert_bitwise(got, want, what):
    """Bitwise equality, except that NaN only has to be NaN (the GPU returns canonical NaNs)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, what
    if want.dtype.kind in "fc" or want.dtype == np.float16:
        nan_want = np.isnan(want)
        nan_got = np.isnan(got)
        assert np.array_equal(nan_want, nan_got), f"{what}: NaN positions differ"
        got, want = got[~nan_want], want[~nan_want]
    mismatch = np.flatnonzero(np.any(bits(got) != bits(want), axis=-1)) if got.size else []
    assert len(mismatch) == 0, (f"{what}: {len(mismatch)} of {got.size} elements differ, first at "
                                f"{mismatch[0]}: got {got[mismatch[0]]!r} want {want[mismatch[0]]!r}")


def assert_sum_within_rounding(got, want, inputs, code, what):
    """Where NCCL sums (it promises the sum, not our rank order): floating-point results within
    the usual 2 N eps sum|x| of the rank-order reference, over the N `inputs`; others bitwise."""
    if code not in (dtypes.F16, dtypes.BF16, dtypes.F32, dtypes.F64, dtypes.C64, dtypes.C128):
        assert_bitwise(got, want, what)
        return
    if code == dtypes.BF16:  # held as uint16 bit patterns: compare values, not the patterns
        got, want, inputs = reduction.bf16_to_f32(got), reduction.bf16_to_f32(want), \
            [reduction.bf16_to_f32(x) for x in inputs]
    scale = sum(np.abs(x.astype(np.complex128 if code in dtypes.COMPLEX else np.float64)) for x in inputs)
    eps = float(np.finfo(dtypes.numpy_dtype(code)).eps) if code != dtypes.BF16 else 2.0 ** -7
    err = np.abs(got.astype(np.complex128) - want.astype(np.complex128))
    bound = 2 * len(inputs) * eps * scale
    assert np.all(err <= bound), f"{what}: {int(np.sum(err > bound))} elements beyond rounding"


def as_argument(arr, code):
    """The array to hand to Allreduce: bfloat16 (held as uint16 bits) travels as a torch
    bfloat16 view of the same memory, since cupy and numpy have no bfloat16 dtype."""
    if code != dtypes.BF16:
        return arr
    import pytest
    torch = pytest.importorskip("torch", reason="bfloat16 device buffers are tested through torch")
    return torch.as_tensor(arr, device="cuda").view(torch.bfloat16)


def poison(arr):
    """Fill a device array with a pattern no reduction produces by chance (0xA5 bytes)."""
    arr.view("uint8").fill(0xA5)


def run_allreduce(comm, code, op, count, seed, inplace):
    """This rank's input of the case on the device, one Allreduce of it (in place, or into a
    poisoned receive buffer, the send buffer checked unchanged), the result on the host."""
    import cupy
    from mpi4py import MPI
    host = host_input(code, op, count, seed, comm.Get_rank())
    send = cupy.asarray(host)
    recv = send if inplace else cupy.empty_like(send)
    if not inplace:
        poison(recv)
    comm.Allreduce(MPI.IN_PLACE if inplace else as_argument(send, code), as_argument(recv, code),
                   op=dtypes.mpi_ops_by_code()[op])
    got = cupy.asnumpy(recv)
    if not inplace:
        assert_bitwise(cupy.asnumpy(send), host, "send buffer modified")
    return got


def diagnostics_missing():
    """Why the diagnostic module (LL modes 1..3, probes, peek/poke) cannot be used, or None."""
    try:
        from hpcolls import _native_diag  # noqa: F401
        return None
    except ImportError as exc:
        return f"needs the diagnostic build (HPCOLLS_DIAGNOSTICS=1 at install): {exc}"
