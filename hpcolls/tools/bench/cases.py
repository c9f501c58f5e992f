"""The benchmark's collectives: for each, the message of a size step, its buffers (numpy or cupy,
in place or not), the call's arguments as mpi4py takes them, the result every rank should hold,
and nccl-tests' bus-bandwidth factor.

Sizes and bandwidths are nccl-tests' (its doc/PERFORMANCE.md): the size S of a row is the
message of Allreduce, Bcast and Reduce, and the whole of Allgather's result and of
Reduce_scatter's input (n blocks of S/n); algbw = S / time; busbw = algbw x 2(n-1)/n for
Allreduce, (n-1)/n for Allgather and Reduce_scatter, 1 for Bcast and Reduce. Reduce_scatter is
Reduce_scatter_block (equal blocks), as nccl-tests' reduce_scatter is.

Data are small integers (exact in any type and in any summation order), so every route's result
is checked exactly.
"""
from dataclasses import dataclass
from functools import reduce

import numpy as np
from mpi4py import MPI

COLLECTIVES = ("allreduce", "bcast", "reduce", "allgather", "reduce_scatter")
METHOD = {"allreduce": "Allreduce", "bcast": "Bcast", "reduce": "Reduce", "allgather": "Allgather",
          "reduce_scatter": "Reduce_scatter_block"}
REDUCES = {"allreduce", "reduce", "reduce_scatter"}
ROOTED = {"bcast", "reduce"}
BLOCKS = {"allgather", "reduce_scatter"}  # the size is n blocks
MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}
_NUMPY_OPS = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}


def busbw_factor(coll, n):
    """nccl-tests' factor from algorithm to bus bandwidth (doc/PERFORMANCE.md)."""
    if coll == "allreduce":
        return 2 * (n - 1) / n
    return (n - 1) / n if coll in BLOCKS else 1.0


def block_count(coll, step, itemsize, n):
    """Elements of one rank's block (the whole message where there are no blocks) in a row of
    size step bytes; 0 where the step holds less than an element per block."""
    return step // (itemsize * (n if coll in BLOCKS else 1))


def make_data(xp, count, dtype, rank):
    base = xp.arange(count, dtype=np.int64) % 7 + rank + 1
    return base.astype(dtype)


@dataclass
class Case:
    """One call's buffers on one rank: `args`/`kwargs` as mpi4py takes them, the array holding
    this rank's result (None off a Reduce's root), and `reset()`, which makes the buffers as
    they were before the first call (a repeated in-place call compounds; a result is poisoned)."""
    args: tuple
    kwargs: dict
    result: object
    reset: object


def case(xp, coll, block, dtype, inplace, rank, n, root, op):
    """The Case of collective `coll` with blocks of `block` elements of `dtype` in module xp."""
    size = block * n if coll in BLOCKS and coll != "allgather" else block
    mine = make_data(xp, size, dtype, rank)
    if coll == "bcast":
        buf = mine.copy()

        def reset():
            buf[...] = mine if rank == root else 0
        return Case((buf,), {"root": root}, buf, reset)
    if coll == "allgather":
        recv = xp.zeros(n * block, dtype=dtype)

        def reset():
            recv[...] = 0
            if inplace:
                recv[rank * block:(rank + 1) * block] = mine
        reset()
        return Case((MPI.IN_PLACE if inplace else mine, recv), {}, recv, reset)
    kwargs = {"op": MPI_OPS[op]}
    if coll == "reduce":
        kwargs["root"] = root
        at_root = rank == root
        recv = (mine.copy() if inplace else xp.zeros(block, dtype=dtype)) if at_root else None
        send = MPI.IN_PLACE if inplace and at_root else mine
    elif coll == "reduce_scatter":
        recv = mine.copy() if inplace else xp.zeros(block, dtype=dtype)
        send = MPI.IN_PLACE if inplace else mine
    else:  # allreduce
        recv = mine.copy() if inplace else xp.zeros(block, dtype=dtype)
        send = MPI.IN_PLACE if inplace else mine

    def reset_reduction():
        if recv is not None:
            recv[...] = mine if inplace else 0
    result = recv[:block] if recv is not None else None
    return Case((send, recv), kwargs, result, reset_reduction)


def expected(coll, block, dtype, n, rank, root, op):
    """The result this rank should hold (None off a Reduce's root)."""
    if coll == "bcast":
        return make_data(np, block, dtype, root)
    if coll == "allgather":
        return np.concatenate([make_data(np, block, dtype, r) for r in range(n)])
    if coll == "reduce" and rank != root:
        return None
    size = block * n if coll == "reduce_scatter" else block
    total = reduce(_NUMPY_OPS[op], [make_data(np, size, dtype, r) for r in range(n)]).astype(dtype)
    return total[rank * block:(rank + 1) * block] if coll == "reduce_scatter" else total
