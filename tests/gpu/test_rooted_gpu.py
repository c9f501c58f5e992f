"""The native Bcast, Reduce and Reduce_scatter (NativeComm.bcast / reduce / reduce_scatter /
reduce_scatter_block; native/include/hpcolls/{bcast,reduce_scatter}/oneshot.cuh, Reduce running
Reduce_scatter's kernel) on the GPU machine, called on the native object directly (the Communicator's routing to them is another
branch's): every root, sizes from 1 element to the largest the native path takes, every dtype x op
of the reductions, in place and out, bitwise against a host reference reduced in rank order, bytes
after each result untouched; CUDA-graph replays; a long random mix of all five native collectives
on two communicators against a reference; a rank skipping a call times out on the others.

HPCOLLS_TEST_GRAPH_REPLAYS (default 1000) and HPCOLLS_TEST_STRESS_CALLS (default 100,000) set the
two long tests' lengths."""
import os
import time

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from hpcolls import dtypes

from allreduce_cases import ALL_CODES, ALL_OPS, assert_bitwise, digest, host_input, reduce_in_rank_order, supported

cupy = pytest.importorskip("cupy")

from test_allgather_gpu import GUARD, block, native_comm  # noqa: E402 (after the skip: it needs cupy)
WORLD = MPI.COMM_WORLD
N, RANK = WORLD.size, WORLD.rank
COUNTS = (1, 2, 3, 7, 9, 31, 127, 1000, 4097)
POISON = 0xA5
GRAPH_REPLAYS = int(os.environ.get("HPCOLLS_TEST_GRAPH_REPLAYS", "1000"))
STRESS_CALLS = int(os.environ.get("HPCOLLS_TEST_STRESS_CALLS", "100000"))


@pytest.fixture(scope="module")
def seed():
    return WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63), root=0)


@pytest.fixture(scope="module")
def comm(gpu):
    c = native_comm()
    yield c
    c.close()


def poisoned(nbytes, offset=0):
    """(the whole allocation, a view of nbytes starting `offset` bytes into it), GUARD bytes after."""
    space = cupy.full(offset + nbytes + GUARD, POISON, dtype=cupy.uint8)
    return space, space[offset:offset + nbytes]


def guard_intact(space, offset, nbytes):
    return bool(cupy.all(space[offset + nbytes:] == POISON))


def finish(nc):
    cupy.cuda.Device().synchronize()
    nc.check()


def test_bcast_every_size_and_root(comm, seed):
    nc = comm._native
    largest = nc.largest_bcast()
    assert largest > 0 and largest % 16 == 0
    for nbytes in list(range(1, 40)) + [255, 256, 4095, 4097, 65537, largest - 1, largest]:
        for root in range(N):
            for offset in ((0, 3) if nbytes < 5000 else (0,)):
                want = block(seed, root, nbytes, tag=10)
                space, buf = poisoned(nbytes, offset)
                if RANK == root:
                    buf[:] = cupy.asarray(want)
                assert nc.bcast(buf.data.ptr, nbytes, root, 0) == 0, f"{nbytes} B not taken"
                finish(nc)
                what = f"bcast of {nbytes} B from root {root}, offset {offset}"
                got = cupy.asnumpy(buf)
                bad = np.flatnonzero(got != want)
                assert bad.size == 0, f"{what}: {bad.size} bytes wrong, first at {bad[0]}"
                assert guard_intact(space, offset, nbytes), f"{what}: bytes after the buffer written"
                assert len(set(WORLD.allgather(digest(got)))) == 1, f"{what}: ranks differ"
    x = cupy.zeros(largest + 16, dtype=cupy.uint8)
    assert nc.bcast(x.data.ptr, largest + 16, 0, 0) == -1, "a message past the limit was taken"
    assert nc.bcast(x.data.ptr, 0, 0, 0) == 0
    with pytest.raises(ValueError, match="root"):
        nc.bcast(x.data.ptr, 8, N, 0)


def reduce_case(nc, code, op, count, seed, root, inplace, tag=0):
    """One native Reduce; returns (result or None off the root, the reference) after checking
    that the send buffer, a non-root's receive buffer and the bytes after the result are intact."""
    itemsize = dtypes.ITEMSIZE[code]
    mine = host_input(code, op, count, seed + tag, RANK)
    send = cupy.asarray(mine)
    space, recv = poisoned(count * itemsize)
    at_root = RANK == root
    if inplace and at_root:
        recv[:] = send.view(cupy.uint8)
        send = recv
    assert nc.reduce(send.data.ptr, recv.data.ptr, count, code, op, root, 0) == 0
    finish(nc)
    what = f"reduce {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} count={count} root={root} inplace={inplace}"
    assert guard_intact(space, 0, count * itemsize), f"{what}: bytes after the result written"
    if not at_root:
        assert bool(cupy.all(recv == POISON)), f"{what}: a non-root's receive buffer was written"
        assert_bitwise(cupy.asnumpy(send).view(mine.dtype), mine, f"{what}: send buffer modified")
        return None, what
    want = reduce_in_rank_order(code, op, [host_input(code, op, count, seed + tag, r) for r in range(N)])
    got = cupy.asnumpy(recv).view(mine.dtype)
    assert_bitwise(got, want, what)
    return got, what


@pytest.mark.parametrize("code", ALL_CODES, ids=dtypes.NAMES)
def test_reduce_every_dtype_op_root(comm, seed, code):
    nc = comm._native
    for op in ALL_OPS:
        if not supported(code, op):
            continue
        for count in COUNTS:
            for root in range(N):
                for inplace in (False, True):
                    reduce_case(nc, code, op, count, seed, root, inplace)


def test_reduce_at_its_limit_and_past_it(comm, seed):
    nc = comm._native
    largest = nc.largest_reduce() // 8
    for count in (largest - 1, largest):
        reduce_case(nc, dtypes.F64, dtypes.SUM, count, seed, N - 1, False, tag=1)
    x = cupy.zeros(largest + 2, dtype=cupy.float64)
    assert nc.reduce(x.data.ptr, x.data.ptr, largest + 2, dtypes.F64, dtypes.SUM, 0, 0) == -1
    with pytest.raises(ValueError, match="not defined"):
        nc.reduce(x.data.ptr, x.data.ptr, 1, dtypes.F64, dtypes.BAND, 0, 0)


def reduce_scatter_case(nc, code, op, counts, seed, inplace, tag=0):
    """One native Reduce_scatter of blocks of `counts` elements (the same on every rank), checked
    against the rank-order reduction of this rank's block."""
    itemsize = dtypes.ITEMSIZE[code]
    total, mine_count = sum(counts), counts[RANK]
    first = sum(counts[:RANK])
    mine = host_input(code, op, total, seed + tag, RANK)
    send = cupy.asarray(mine)
    result_bytes = mine_count * itemsize
    space, recv = poisoned(total * itemsize if inplace else result_bytes)
    if inplace:
        recv[:] = send.view(cupy.uint8)
        send = recv
    equal = len(set(counts)) == 1
    taken = (nc.reduce_scatter_block(send.data.ptr, recv.data.ptr, counts[0], code, op, 0) if equal and tag % 2 == 0
             else nc.reduce_scatter(send.data.ptr, recv.data.ptr, list(counts), code, op, 0))
    what = f"reduce_scatter {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} counts={counts} inplace={inplace}"
    if inplace and max(counts) > counts[0]:
        assert taken == -1, f"{what}: taken in place with a block larger than block 0"
        return
    assert taken == 0, f"{what}: not taken"
    finish(nc)
    assert guard_intact(space, 0, recv.size), f"{what}: bytes after the buffer written"
    if not inplace:
        assert_bitwise(cupy.asnumpy(send).view(mine.dtype), mine, f"{what}: send buffer modified")
    want = reduce_in_rank_order(
        code, op, [host_input(code, op, total, seed + tag, r)[first:first + mine_count] for r in range(N)])
    assert_bitwise(cupy.asnumpy(recv[:result_bytes]).view(mine.dtype), want, what)


@pytest.mark.parametrize("code", ALL_CODES, ids=dtypes.NAMES)
def test_reduce_scatter_every_dtype_op(comm, seed, code):
    nc = comm._native
    rng = np.random.default_rng([seed, code])
    for op in ALL_OPS:
        if not supported(code, op):
            continue
        for count in COUNTS:
            for inplace in (False, True):
                reduce_scatter_case(nc, code, op, (count,) * N, seed, inplace)
                # Different counts, some empty; block 0 the largest half the time (so in place is taken).
                counts = [int(c) for c in rng.integers(0, count + 1, N)]
                if rng.integers(0, 2):
                    counts[0] = max(counts)
                reduce_scatter_case(nc, code, op, tuple(counts), seed, inplace, tag=1)


def test_reduce_scatter_at_its_limit_and_past_it(comm, seed):
    nc = comm._native
    largest = nc.largest_reduce_scatter() // 8
    for count in (largest - 1, largest):
        reduce_scatter_case(nc, dtypes.I64, dtypes.SUM, (count,) * N, seed, False)
    x = cupy.zeros(N * (largest + 2), dtype=cupy.int64)
    assert nc.reduce_scatter_block(x.data.ptr, x.data.ptr, largest + 2, dtypes.I64, dtypes.SUM, 0) == -1
    assert nc.reduce_scatter(x.data.ptr, x.data.ptr, [0] * N, dtypes.I64, dtypes.SUM, 0) == 0
    with pytest.raises(ValueError, match="counts for"):
        nc.reduce_scatter(x.data.ptr, x.data.ptr, [1] * (N + 1), dtypes.I64, dtypes.SUM, 0)


def test_cuda_graph_of_all_three_replayed(gpu, seed):
    """A graph of (x += 1; Reduce x to the last rank; Bcast the sum from there; Reduce_scatter_block
    x), int64 SUM, replayed GRAPH_REPLAYS times and read back after every replay."""
    comm = native_comm()
    nc = comm._native
    m = 77  # elements per rank's block
    base = [np.random.default_rng([seed, r, 3]).integers(-2**40, 2**40, N * m) for r in range(N)]
    x = cupy.asarray(base[RANK])
    total = cupy.zeros(N * m, dtype=cupy.int64)
    mine = cupy.zeros(m, dtype=cupy.int64)
    stream = cupy.cuda.Stream(non_blocking=True)
    root = N - 1
    cupy.cuda.Device().synchronize()
    with stream:
        stream.begin_capture()
        x += 1
        nc.reduce(x.data.ptr, total.data.ptr, N * m, dtypes.I64, dtypes.SUM, root, stream.ptr)
        nc.bcast(total.data.ptr, total.nbytes, root, stream.ptr)
        nc.reduce_scatter_block(x.data.ptr, mine.data.ptr, m, dtypes.I64, dtypes.SUM, stream.ptr)
        graph = stream.end_capture()
    try:
        for k in range(GRAPH_REPLAYS):
            graph.launch(stream)
            stream.synchronize()
            want = sum(base) + N * (k + 1)
            assert np.array_equal(cupy.asnumpy(total), want), f"replay {k}: reduce + bcast"
            assert np.array_equal(cupy.asnumpy(mine), want[RANK * m:(RANK + 1) * m]), f"replay {k}: reduce_scatter"
        nc.check()
    finally:
        comm.close()


FILL = cupy.ElementwiseKernel("int64 call, int64 j, int64 rank", "int64 x",
                              "x = (call * 131 + j * 7 + rank * 29) % 1000003;", "hpcolls_test_rooted_fill")


def filled(k, n, rank):
    x = cupy.empty(n, dtype=cupy.int64)
    FILL(k, cupy.arange(n), rank, x)
    return x


def summed(k, n):
    return sum(filled(k, n, r) for r in range(N))


def test_stress_all_five_collectives_on_two_communicators(gpu):
    """STRESS_CALLS calls at random: Allreduce, Allgather, Bcast, Reduce, Reduce_scatter (int64 or
    float64 SUM, exact for these values, or bytes; 1..1024 elements, any root, in place or not),
    each on one of two communicators chosen at random, no synchronization inside a batch of 500;
    every result checked afterwards."""
    comms = [native_comm(), native_comm()]
    rng = np.random.default_rng(WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63)))
    batch = 500
    try:
        for start in range(0, STRESS_CALLS, batch):
            checks = []
            for k in range(start, min(start + batch, STRESS_CALLS)):
                nc = comms[int(rng.integers(0, 2))]._native
                kind, n, root, inplace = (int(rng.integers(0, 5)), int(rng.integers(1, 1025)), int(rng.integers(0, N)),
                                          bool(rng.integers(0, 2)))
                code = (dtypes.I64, dtypes.F64)[int(rng.integers(0, 2))]
                x = filled(k, n * (N if kind == 4 else 1), RANK).astype(dtypes.numpy_dtype(code))
                if kind == 0:
                    out = x if inplace else cupy.empty_like(x)
                    assert nc.allreduce(x.data.ptr, out.data.ptr, n, code, dtypes.SUM, 0) >= 0
                    checks.append((k, kind, out, lambda k=k, n=n: summed(k, n)))
                elif kind == 1:
                    out = cupy.empty(N * n, dtype=x.dtype)
                    assert nc.allgather(x.data.ptr, out.data.ptr, 8 * n, 0, 0) == 0
                    checks.append((k, kind, out, lambda k=k, n=n: cupy.concatenate([filled(k, n, r) for r in range(N)])))
                elif kind == 2:
                    assert nc.bcast(x.data.ptr, 8 * n, root, 0) == 0
                    checks.append((k, kind, x, lambda k=k, n=n, root=root: filled(k, n, root)))
                elif kind == 3:
                    out = x if inplace and RANK == root else cupy.empty_like(x)
                    assert nc.reduce(x.data.ptr, out.data.ptr, n, code, dtypes.SUM, root, 0) == 0
                    if RANK == root:
                        checks.append((k, kind, out, lambda k=k, n=n: summed(k, n)))
                else:
                    out = x if inplace else cupy.empty(n, dtype=x.dtype)
                    assert nc.reduce_scatter_block(x.data.ptr, out.data.ptr, n, code, dtypes.SUM, 0) == 0
                    checks.append((k, kind, out[:n], lambda k=k, n=n: summed(k, N * n)[RANK * n:(RANK + 1) * n]))
            cupy.cuda.Device().synchronize()
            for k, kind, got, want in checks:
                assert bool(cupy.all(got == want().astype(got.dtype))), f"call {k}: collective {kind} wrong"
        for c in comms:
            c._native.check()
    finally:
        for c in comms:
            c.close()


@pytest.mark.skipif(N < 2, reason="a skipped call needs at least two ranks")
@pytest.mark.parametrize("name", ["bcast", "reduce", "reduce_scatter"])
def test_rank_skipping_a_call_times_out_not_hangs(gpu, name):
    """Rank 0 (the root) skips the call: every other rank's kernel gives up and says so."""
    comm = native_comm(timeout=1.0)
    nc = comm._native
    x = cupy.zeros(N * 8, dtype=cupy.int64)
    y = cupy.zeros(8, dtype=cupy.int64)
    comm.synchronize()
    WORLD.Barrier()
    if RANK != 0:
        start = time.monotonic()
        if name == "bcast":
            nc.bcast(x.data.ptr, 64, 0, 0)
        elif name == "reduce":
            nc.reduce(x.data.ptr, y.data.ptr, 8, dtypes.I64, dtypes.SUM, 0, 0)
        else:
            nc.reduce_scatter_block(x.data.ptr, y.data.ptr, 8, dtypes.I64, dtypes.SUM, 0)
        with pytest.raises(hpcolls.CollectiveTimeout, match=rf"timed out .* in {name} \(one-shot\)"):
            comm.synchronize()
        assert time.monotonic() - start < 10
    WORLD.Barrier()
    comm.close()
