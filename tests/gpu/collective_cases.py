"""One call of each collective besides Allreduce through an hpcolls communicator, on device buffers
of random data (allreduce_cases.host_input: every rank's input a pure function of seed, rank and
case), results poisoned first and followed by GUARD poisoned elements, and what the call must give:
the host reference in rank order (allreduce_cases.reduce_in_rank_order, hpcolls/reduction.py).

Each `run_*` makes the call and returns (this rank's result or None, the reference or None), after
checking what the call must not touch: the guard elements, a send buffer, a receive buffer off a
Reduce's root.
"""
import numpy as np
from mpi4py import MPI

from hpcolls import dtypes

from allreduce_cases import as_argument, assert_bitwise, host_input, poison, reduce_in_rank_order

WORLD = MPI.COMM_WORLD
N, RANK = WORLD.size, WORLD.rank
MPI_OPS = dtypes.mpi_ops_by_code()
GUARD = 16  # elements after each result that must keep their poison


def _cupy():
    import cupy
    return cupy


def inputs(code, op, total, seed):
    """Every rank's input of `total` elements (host arrays), in rank order."""
    return [host_input(code, op, total, seed, r) for r in range(N)]


def arg(x, code):
    """A buffer argument as the call takes it (bfloat16 as a torch view; IN_PLACE and None as they are)."""
    return x if x is None or x is MPI.IN_PLACE else as_argument(x, code)


def poisoned(count, dtype, offset=0):
    """(allocation, its `count` elements from `offset`), every byte poisoned, GUARD elements after."""
    space = _cupy().empty(offset + count + GUARD, dtype=dtype)
    poison(space)
    return space, space[offset:offset + count]


def check_untouched(space, start, what):
    """The elements of `space` from `start` still hold the poison."""
    tail = _cupy().asnumpy(space[start:]).view(np.uint8)
    assert np.all(tail == 0xA5), f"{what}: {int(np.sum(tail != 0xA5))} poisoned bytes after the result written"


def run_bcast(comm, code, count, seed, root, offset=0):
    mine, want = host_input(code, dtypes.SUM, count, seed, RANK), host_input(code, dtypes.SUM, count, seed, root)
    space, buf = poisoned(count, mine.dtype, offset)
    if RANK == root:
        buf[...] = _cupy().asarray(mine)
    comm.Bcast(arg(buf, code), root=root)
    check_untouched(space, offset + count, f"Bcast of {count} from {root}")
    return _cupy().asnumpy(buf), want


def run_reduce(comm, code, op, count, seed, root, inplace):
    contributions = inputs(code, op, count, seed)
    mine = contributions[RANK]
    send = _cupy().asarray(mine)
    space, recv = poisoned(count, mine.dtype)
    at_root = RANK == root
    if inplace and at_root:
        recv[...] = send
    what = f"Reduce {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} of {count} to {root}{' in place' if inplace else ''}"
    # Off the root the receive buffer is not read: passing one checks that nothing writes it.
    comm.Reduce(MPI.IN_PLACE if inplace and at_root else arg(send, code), arg(recv, code), op=MPI_OPS[op], root=root)
    check_untouched(space, count if at_root else 0, what)
    if not (inplace and at_root):
        assert_bitwise(_cupy().asnumpy(send), mine, f"{what}: send buffer modified")
    if not at_root:
        return None, None
    return _cupy().asnumpy(recv), reduce_in_rank_order(code, op, contributions)


def run_allgather(comm, code, count, seed, inplace, offset=0):
    contributions = inputs(code, dtypes.SUM, count, seed)
    mine = contributions[RANK]
    space, recv = poisoned(N * count, mine.dtype, offset)
    if inplace:
        recv[RANK * count:(RANK + 1) * count] = _cupy().asarray(mine)
    comm.Allgather(MPI.IN_PLACE if inplace else arg(_cupy().asarray(mine), code), arg(recv, code))
    check_untouched(space, offset + N * count, f"Allgather of {count}")
    return _cupy().asnumpy(recv), np.concatenate(contributions)


def run_reduce_scatter(comm, code, op, counts, seed, inplace, block_variant=False):
    """Reduce_scatter with `counts` (Reduce_scatter_block where `block_variant`, counts equal)."""
    total, first = sum(counts), sum(counts[:RANK])
    contributions = inputs(code, op, total, seed)
    mine = contributions[RANK]
    send = _cupy().asarray(mine)
    space, recv = poisoned(total if inplace else counts[RANK], mine.dtype)
    if inplace:
        recv[...] = send
    what = (f"{'Reduce_scatter_block' if block_variant else 'Reduce_scatter'} {dtypes.NAMES[code]} "
            f"{dtypes.OP_NAMES[op]} counts {list(counts)}{' in place' if inplace else ''}")
    sendarg = MPI.IN_PLACE if inplace else arg(send, code)
    if block_variant:
        comm.Reduce_scatter_block(sendarg, arg(recv, code), op=MPI_OPS[op])
    else:
        comm.Reduce_scatter(sendarg, arg(recv, code), list(counts), op=MPI_OPS[op])
    check_untouched(space, total if inplace else counts[RANK], what)
    if not inplace:
        assert_bitwise(_cupy().asnumpy(send), mine, f"{what}: send buffer modified")
    want = reduce_in_rank_order(code, op, [c[first:first + counts[RANK]] for c in contributions])
    return _cupy().asnumpy(recv[:counts[RANK]]), want


_stress_pattern = None


def stress_pattern():
    """The elementwise kernel (call, j, rank) -> x[j] of call `call` on rank `rank`: an integer in
    [-1000, 1000], so that sums of a few ranks' values are exact in float64 in any order (the
    stress tests check results without a host reference per call)."""
    global _stress_pattern
    if _stress_pattern is None:
        _stress_pattern = _cupy().ElementwiseKernel(
            "int64 call, int64 j, int64 rank", "float64 x",
            "x = (double)((call * 7919 + j * 104729 + rank * 15485863) % 2001) - 1000.0;",
            "hpcolls_test_stress_pattern")
    return _stress_pattern
