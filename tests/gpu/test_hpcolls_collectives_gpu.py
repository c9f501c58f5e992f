"""Bcast, Reduce, Allgather, Reduce_scatter_block and Reduce_scatter of device buffers through
hpcolls.Communicator, on the GPU machine. Their route is hpcolls/routes/native.py, their kernels
native/include/hpcolls/{bcast,allgather,reduce_scatter}/oneshot.cuh and, at 2, 4 and 8 ranks,
reduce_scatter/oneshot_small.cuh (Reduce runs Reduce_scatter's; both of its kernels are run). Every dtype x op; 1 element to 16 MiB, odd counts, the native limit's edges and
past it (in pieces, or NCCL where every rank has its own GPU); every root; in place and out; views
not 16-byte aligned; the bytes after each result untouched; bitwise against the host reference in
rank order and, where every rank receives the same, across ranks. Then a CUDA graph of every
collective replayed HPCOLLS_TEST_GRAPH_REPLAYS times (default 1000); a random mix of
HPCOLLS_TEST_STRESS_CALLS calls (default 100,000 at 1 and 2 ranks, 20,000 above) of every
collective, type, op, root, size and place on two communicators, every rank drawing the same
sequence from a shared seed, against the host reference; a rank skipping a call: CollectiveTimeout
on the others, then CommunicatorBroken, never a hang; graph-capture refusals, HPCOLLS_VALIDATE
and HPCOLLS_DEBUG=INFO. Allreduce has its own: test_hpcolls_allreduce_gpu.py."""
import os
import time

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from hpcolls import _native, dtypes, log, settings
from hpcolls.routes.native import NATIVE_ORDER, route_of

from allreduce_cases import (ALL_CODES, ALL_OPS, assert_bitwise, assert_sum_within_rounding, digest,
                             reduce_in_rank_order, supported)
from collective_cases import (MPI_OPS, N, RANK, inputs, run_allgather, run_bcast, run_reduce,
                              run_reduce_scatter)

cupy = pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD
COUNTS = (1, 2, 3, 7, 9, 31, 127, 1000, 4097)
GRAPH_REPLAYS = int(os.environ.get("HPCOLLS_TEST_GRAPH_REPLAYS", "1000"))
STRESS_CALLS = int(os.environ.get("HPCOLLS_TEST_STRESS_CALLS", "100000" if N <= 2 else "20000"))


@pytest.fixture(scope="module")
def seed():
    return WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63), root=0)


@pytest.fixture(scope="module")
def comm(gpu):
    """The module's communicator, its native path open (a Bcast opens it, as any of them does)."""
    c = hpcolls.Communicator(WORLD)
    c.Bcast(cupy.zeros(1), root=0)
    assert c.native_path == "on", c.native_path
    yield c
    c.close()


SMALL_KERNEL = "one-shot (small-message kernel)"
KERNEL_SETTINGS = {"small-message kernel": {}, "general kernel": {"HPCOLLS_THREADS_PER_BLOCK": "64"}}


@pytest.fixture(scope="module", params=list(KERNEL_SETTINGS))
def kernel_comm(gpu, request):
    """A communicator whose Bcast, Reduce, Reduce_scatter and Allgather run each of their kernels: the
    small-message one (2, 4 and 8 ranks, as Allreduce's) and the general one (other rank counts,
    larger messages, and any rank count under HPCOLLS_THREADS_PER_BLOCK, a diagnosis setting)."""
    with settings.overridden(KERNEL_SETTINGS[request.param]):
        c = hpcolls.Communicator(WORLD)
        c.Reduce(cupy.zeros(1), cupy.zeros(1), op=MPI.SUM, root=0)  # opens the native path under the settings
    small = request.param == "small-message kernel" and N in _native.SMALL_ONESHOT_RANKS
    for name in ("bcast", "reduce", "reduce_scatter", "allgather"):
        kernel = c._paths.native.plan(8, dtypes.F64, dtypes.SUM, NATIVE_ORDER.index(name))["kernel"]
        assert kernel == (SMALL_KERNEL if small else "one-shot"), (request.param, name, kernel)
    yield c
    c.close()


def roots(count):
    """Every root for the small counts, the first and last for the large ones (the time they take
    at 8 ranks)."""
    return range(N) if count < 1000 else sorted({0, N - 1})


def same_everywhere(got, what):
    assert len(set(WORLD.allgather(digest(got)))) == 1, f"{what}: ranks got different bits"


def some_counts(rng, count, block_0_largest):
    """A count per rank, some empty; block 0 the largest where asked (an in-place call then stays
    on the kernels)."""
    counts = [int(c) for c in rng.integers(0, count + 1, N)]
    if block_0_largest:
        counts[0] = max(counts)
    return counts


@pytest.mark.parametrize("code", ALL_CODES, ids=dtypes.NAMES)
def test_bcast_every_dtype_count_root_and_place_on_both_kernels(kernel_comm, seed, code):
    data_moving(kernel_comm, seed, code, "Bcast")


@pytest.mark.parametrize("code", ALL_CODES, ids=dtypes.NAMES)
def test_allgather_every_dtype_count_and_place_on_both_kernels(kernel_comm, seed, code):
    data_moving(kernel_comm, seed, code, "Allgather")


def data_moving(comm, seed, code, name):
    """Bcast from every root, Allgather in place and not: any type, as bytes; odd counts, and
    views one element into their allocation (not 16-byte aligned)."""
    for count in COUNTS:
        for variant in (roots(count) if name == "Bcast" else (False, True)):
            for offset in ((0, 1) if count < 100 else (0,)):
                run = run_bcast if name == "Bcast" else run_allgather
                got, want = run(comm, code, count, seed + count, variant, offset)
                what = (f"{name} {dtypes.NAMES[code]} x {count} ({'root' if name == 'Bcast' else 'in place'} "
                        f"{variant}), offset {offset}")
                assert_bitwise(got, want, what)
                same_everywhere(got, what)


@pytest.mark.parametrize("code", ALL_CODES, ids=dtypes.NAMES)
def test_reduce_every_dtype_op_count_and_root(kernel_comm, seed, code):
    comm = kernel_comm
    for op in ALL_OPS:
        if not supported(code, op):
            continue
        for count in COUNTS:
            for root in roots(count):
                for inplace in (False, True):
                    got, want = run_reduce(comm, code, op, count, seed + count, root, inplace)
                    if got is not None:
                        assert_bitwise(got, want, f"Reduce {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} x {count} "
                                                  f"to {root}, inplace={inplace}")


@pytest.mark.parametrize("code", ALL_CODES, ids=dtypes.NAMES)
def test_reduce_scatter_every_dtype_op_and_counts(kernel_comm, seed, code):
    comm = kernel_comm
    rng = np.random.default_rng([seed, code])
    for op in ALL_OPS:
        if not supported(code, op):
            continue
        for count in COUNTS:
            for inplace in (False, True):
                cases = [((count,) * N, True), ((count,) * N, False), (some_counts(rng, count, inplace), False)]
                for counts, block_variant in cases:
                    got, want = run_reduce_scatter(comm, code, op, counts, seed + count, inplace, block_variant)
                    assert_bitwise(got, want, f"{'Reduce_scatter_block' if block_variant else 'Reduce_scatter'} "
                                              f"{dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} counts {counts}, "
                                              f"inplace={inplace}")


def test_in_place_reduce_scatter_with_a_block_larger_than_block_0(comm, seed):
    """The kernels refuse it (their result would overwrite input not yet read): NCCL or MPI takes
    it, every rank alike, and the result is right (integers: exact in any order)."""
    if N < 2:
        pytest.skip("one rank has one block")
    counts = [1] + [5] * (N - 1)
    assert route_of(comm, "Reduce_scatter", MPI.IN_PLACE, cupy.zeros(sum(counts), dtype=cupy.int64),
                    counts).route == "mpi"
    got, want = run_reduce_scatter(comm, dtypes.I64, dtypes.SUM, counts, seed, inplace=True)
    assert_bitwise(got, want, "in place, block 1 larger than block 0")


SIZED_CODES = (dtypes.F64, dtypes.I32, dtypes.F16)


@pytest.mark.parametrize("nbytes", [64 << 10, 1 << 20, 4 << 20, 16 << 20])
@pytest.mark.parametrize("code", SIZED_CODES, ids=[dtypes.NAMES[c] for c in SIZED_CODES])
def test_sizes_to_16_mib(comm, seed, code, nbytes):
    """Up to 16 MiB (odd counts): the native kernels whole, past their limit in pieces (rank order,
    bitwise) or NCCL (the sum within rounding where it reduces floating point)."""
    itemsize = dtypes.ITEMSIZE[code]
    count = nbytes // itemsize + 1
    root = N - 1
    route = route_of(comm, "Reduce", cupy.zeros(count, dtypes.numpy_dtype(code)),
                     cupy.zeros(count, dtypes.numpy_dtype(code)), MPI.SUM, root).route
    what = f"{dtypes.NAMES[code]} {nbytes} B ({route})"
    got, want = run_bcast(comm, code, count, seed, root)
    assert_bitwise(got, want, "Bcast " + what)
    same_everywhere(got, "Bcast " + what)
    got, want = run_reduce(comm, code, dtypes.SUM, count, seed, root, inplace=True)
    if got is not None:
        check = assert_sum_within_rounding if route == "nccl" else lambda g, w, i, c, m: assert_bitwise(g, w, m)
        check(got, want, inputs(code, dtypes.SUM, count, seed), code, "Reduce " + what)
    per_rank = max(1, count // N)
    got, want = run_allgather(comm, code, per_rank, seed, inplace=False)
    assert_bitwise(got, want, "Allgather " + what)
    same_everywhere(got, "Allgather " + what)
    for counts, block_variant in (((per_rank,) * N, True), ([per_rank + r % 3 for r in range(N)], False)):
        got, want = run_reduce_scatter(comm, code, dtypes.SUM, counts, seed, False, block_variant)
        nccl = route == "nccl" and len(set(counts)) == 1  # NCCL's ReduceScatter has equal counts only
        if nccl and code in (dtypes.F64, dtypes.F16):
            first = sum(counts[:RANK])
            parts = [c[first:first + counts[RANK]] for c in inputs(code, dtypes.SUM, sum(counts), seed)]
            assert_sum_within_rounding(got, want, parts, code, "Reduce_scatter " + what)
        else:
            assert_bitwise(got, want, f"Reduce_scatter {what} counts {counts[:4]}...")


@pytest.mark.parametrize("name", ["Bcast", "Reduce", "Allgather", "Reduce_scatter_block"])
def test_both_sides_of_the_native_limit(comm, seed, name):
    """The largest message the kernels take whole (the plan's), one element less and one more:
    native whole, then past it pieces (or NCCL where every rank has its own GPU); bitwise."""
    collective = {"Bcast": "bcast", "Reduce": "reduce", "Allgather": "allgather",
                  "Reduce_scatter_block": "reduce_scatter"}[name]
    largest = comm._paths.native.plan(1 << 40, dtypes.F64, dtypes.SUM, NATIVE_ORDER.index(collective))["piece_bytes"]
    assert largest > 0 and largest % 16 == 0, largest
    for count in (largest // 8 - 1, largest // 8, largest // 8 + 1):
        x = cupy.zeros(count * (N if name == "Reduce_scatter_block" else 1))
        out = cupy.zeros(count * (N if name == "Allgather" else 1))
        args = {"Bcast": (x, 0), "Reduce": (x, out, MPI.SUM, 0), "Allgather": (x, out),
                "Reduce_scatter_block": (x, out[:count], MPI.SUM)}[name]
        route = route_of(comm, name, *args).route
        assert route == ("native" if count <= largest // 8 else route) and route in ("native", "pieces", "nccl")
        if name == "Bcast":
            got, want = run_bcast(comm, dtypes.F64, count, seed, N - 1)
        elif name == "Reduce":
            got, want = run_reduce(comm, dtypes.F64, dtypes.MAX, count, seed, 0, inplace=False)
        elif name == "Allgather":
            got, want = run_allgather(comm, dtypes.F64, count, seed, inplace=True)
        else:
            got, want = run_reduce_scatter(comm, dtypes.I64, dtypes.SUM, (count,) * N, seed, False, True)
        if got is not None:
            assert_bitwise(got, want, f"{name} of {count} ({route})")


def test_native_calls_decline_what_they_cannot_take_whole(comm):
    """The native object itself: past its limit a call returns -1 having launched nothing (the
    route then cuts it into pieces); what cannot be is refused with an error naming it."""
    nc = comm._paths.native
    x = cupy.zeros(1 << 22, dtype=cupy.uint8)
    before = nc.host_epoch
    if N > 1:  # alone, a Bcast moves nothing, whatever its size
        assert nc.bcast(x.data.ptr, nc.largest_bcast() + 16, 0, 0) == -1
    assert nc.reduce(x.data.ptr, x.data.ptr, nc.largest_reduce() // 8 + 2, dtypes.F64, dtypes.SUM, 0, 0) == -1
    assert nc.allgather(x.data.ptr, x.data.ptr, nc.largest_allgather() + 16, 0, 0) == -1
    if N > 1:  # in place with block 1 larger than block 0
        assert nc.reduce_scatter(x.data.ptr, x.data.ptr, [1] + [2] * (N - 1), dtypes.I64, dtypes.SUM, 0) == -1
    assert nc.host_epoch == before, "a declined call launched"
    with pytest.raises(ValueError, match="root"):
        nc.bcast(x.data.ptr, 8, N, 0)
    with pytest.raises(ValueError, match="not defined"):
        nc.reduce(x.data.ptr, x.data.ptr, 1, dtypes.F64, dtypes.BAND, 0, 0)
    with pytest.raises(ValueError, match="counts and"):
        nc.reduce_scatter(x.data.ptr, x.data.ptr, [1] * (N + 1), dtypes.I64, dtypes.SUM, 0)
    with pytest.raises(ValueError, match="stride is smaller"):
        nc.allgather(x.data.ptr, x.data.ptr, 64, 32, 0)
    if N > 1:
        with pytest.raises(ValueError, match="overlaps"):  # another rank's block of the receive buffer
            nc.allgather(x.data.ptr + ((RANK + 1) % N) * 64, x.data.ptr, 64, 0, 0)


FILL = cupy.ElementwiseKernel("int64 call, int64 j, int64 rank", "int64 x",
                              "x = (call * 131 + j * 7 + rank * 29) % 1000003;", "hpcolls_test_collectives_fill")


def filled(k, n, rank, dtype):
    x = cupy.empty(n, dtype=cupy.int64)
    FILL(k, cupy.arange(n), rank, x)
    return x.astype(dtype)


def host_filled(k, n, rank, dtype):
    return ((k * 131 + np.arange(n, dtype=np.int64) * 7 + rank * 29) % 1000003).astype(dtype)


def test_cuda_graph_of_every_collective_replayed(comm, seed):
    """A graph of (x += 1; Allreduce, Reduce to the last rank, Bcast of that sum from there,
    Allgather, Reduce_scatter_block, Reduce_scatter with counts; int64 SUM) through the
    communicator on a stream of the caller's, replayed GRAPH_REPLAYS times, every result read
    back after every replay."""
    m, root = 77, N - 1
    counts = [m + (1 if r == 0 else -1 if r == N - 1 else 0) for r in range(N)] if N > 1 else [m]
    base = [np.random.default_rng([seed, r, 3]).integers(-2**40, 2**40, N * m) for r in range(N)]
    x = cupy.asarray(base[RANK])
    summed, total = cupy.zeros(N * m, dtype=cupy.int64), cupy.zeros(N * m, dtype=cupy.int64)
    gathered = cupy.zeros(N * m, dtype=cupy.int64)
    block, part = cupy.zeros(m, dtype=cupy.int64), cupy.zeros(counts[RANK], dtype=cupy.int64)
    stream = cupy.cuda.Stream(non_blocking=True)
    comm.Bcast(total, root=root, stream=stream)  # the communicator is open: nothing to set up inside
    stream.synchronize()
    cupy.cuda.Device().synchronize()
    with stream:
        stream.begin_capture()
        x += 1
        comm.Allreduce(x, summed, op=MPI.SUM, stream=stream)
        comm.Reduce(x, total if RANK == root else None, op=MPI.SUM, root=root, stream=stream)
        comm.Bcast(total, root=root, stream=stream)
        comm.Allgather(x[:m], gathered, stream=stream)
        comm.Reduce_scatter_block(x, block, op=MPI.SUM, stream=stream)
        comm.Reduce_scatter(x, part, counts, op=MPI.SUM, stream=stream)
        graph = stream.end_capture()
    first = sum(counts[:RANK])
    for k in range(GRAPH_REPLAYS):
        graph.launch(stream)
        stream.synchronize()
        want = sum(base) + N * (k + 1)
        assert np.array_equal(cupy.asnumpy(summed), want), f"replay {k}: Allreduce"
        assert np.array_equal(cupy.asnumpy(total), want), f"replay {k}: Reduce + Bcast"
        assert np.array_equal(cupy.asnumpy(gathered), np.concatenate([b[:m] + k + 1 for b in base])), \
            f"replay {k}: Allgather"
        assert np.array_equal(cupy.asnumpy(block), want[RANK * m:(RANK + 1) * m]), f"replay {k}: Reduce_scatter_block"
        assert np.array_equal(cupy.asnumpy(part), want[first:first + counts[RANK]]), f"replay {k}: Reduce_scatter"
    comm.check()


STRESS_KINDS = ("Allreduce", "Bcast", "Reduce", "Allgather", "Reduce_scatter_block", "Reduce_scatter")
# Exact for the fill's values (below 2^20) in any order; wrapping integer ops as the kernels wrap.
STRESS_TYPES = ((dtypes.I64, dtypes.SUM), (dtypes.F64, dtypes.SUM), (dtypes.I32, dtypes.BXOR),
                (dtypes.U8, dtypes.MAX), (dtypes.F32, dtypes.MIN), (dtypes.I16, dtypes.PROD))


def stress_call(comm, rng, k):
    """One call of the mix, drawn from `rng` (the same on every rank); returns (what, result array
    or None, a function giving the host reference)."""
    kind = STRESS_KINDS[int(rng.integers(0, len(STRESS_KINDS)))]
    code, op = STRESS_TYPES[int(rng.integers(0, len(STRESS_TYPES)))]
    n = int(rng.integers(1, 1025)) if rng.integers(0, 100) else int(rng.integers(1025, 40000))
    root, inplace = int(rng.integers(0, N)), bool(rng.integers(0, 2))
    counts = [int(c) for c in rng.integers(0, n + 1, N)]
    dtype, mop = dtypes.numpy_dtype(code), MPI_OPS[op]
    what = f"call {k}: {kind} {dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} n={n} root={root} inplace={inplace}"
    total = {"Reduce_scatter_block": N * n, "Reduce_scatter": sum(counts)}.get(kind, n)
    x = filled(k, total, RANK, dtype)

    def reduced():
        return reduce_in_rank_order(code, op, [host_filled(k, total, r, dtype) for r in range(N)])
    if kind == "Allreduce":
        out = x if inplace else cupy.empty_like(x)
        comm.Allreduce(MPI.IN_PLACE if inplace else x, out, op=mop)
        return what, out, reduced
    if kind == "Bcast":
        comm.Bcast(x, root=root)
        return what, x, lambda: host_filled(k, n, root, dtype)
    if kind == "Reduce":
        at_root = RANK == root
        out = (x if inplace else cupy.empty_like(x)) if at_root else None
        comm.Reduce(MPI.IN_PLACE if inplace and at_root else x, out, op=mop, root=root)
        return what, out, reduced
    if kind == "Allgather":
        out = cupy.empty(N * n, dtype=dtype)
        if inplace:
            out[RANK * n:(RANK + 1) * n] = x
        comm.Allgather(MPI.IN_PLACE if inplace else x, out)
        return what, out, lambda: np.concatenate([host_filled(k, n, r, dtype) for r in range(N)])
    mine = n if kind == "Reduce_scatter_block" else counts[RANK]
    first = RANK * n if kind == "Reduce_scatter_block" else sum(counts[:RANK])
    out = x if inplace else cupy.empty(mine, dtype=dtype)
    if kind == "Reduce_scatter_block":
        comm.Reduce_scatter_block(MPI.IN_PLACE if inplace else x, out, op=mop)
    else:  # in place with a block larger than block 0: NCCL or MPI takes it
        comm.Reduce_scatter(MPI.IN_PLACE if inplace else x, out, counts, op=mop)
    return what, out[:mine], lambda: reduced()[first:first + mine]


def test_stress_every_collective_on_two_communicators(gpu):
    """STRESS_CALLS calls drawn at random (every rank the same sequence, from a shared seed): every
    collective, a type and op of each element size, 1..1024 elements (one call in a hundred up to
    40,000: the kernels in pieces), any root, in place or not, on two communicators taken in turn
    for a batch of 500 calls and at random for the next, with no synchronization inside a batch;
    every result then checked against the host reference in rank order."""
    comms = [hpcolls.Communicator(WORLD), hpcolls.Communicator(WORLD)]
    seed = WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63))
    rng = np.random.default_rng(seed)
    batch = 500
    try:
        for start in range(0, STRESS_CALLS, batch):
            pending = []
            for k in range(start, min(start + batch, STRESS_CALLS)):
                which = k % 2 if (start // batch) % 2 == 0 else int(rng.integers(0, 2))
                pending.append(stress_call(comms[which], rng, k))
            cupy.cuda.Device().synchronize()
            for what, got, want in pending:
                if got is not None:
                    assert_bitwise(cupy.asnumpy(got), want(), f"{what} (seed {seed})")
        for c in comms:
            c.check()
    finally:
        for c in comms:
            c.close()


SKIPPED = {"Bcast": "bcast", "Reduce": "reduce", "Allgather": "allgather", "Reduce_scatter_block": "reduce_scatter",
           "Reduce_scatter": "reduce_scatter"}


@pytest.mark.skipif(N < 2, reason="a skipped call needs at least two ranks")
@pytest.mark.parametrize("name", list(SKIPPED))
def test_a_rank_skipping_a_call_times_out_then_the_communicator_is_broken(gpu, name):
    """Rank 0 (the root) skips the call: every other rank's kernel gives up waiting for it within
    the time-out and says so (CollectiveTimeout naming the collective); its next call on that
    communicator raises CommunicatorBroken at once. Nothing hangs."""
    comm = hpcolls.Communicator(WORLD, timeout=1.0)
    send, recv = cupy.zeros(N * 8, dtype=cupy.int64), cupy.zeros(N * 8, dtype=cupy.int64)
    calls = {"Bcast": lambda: comm.Bcast(send[:8], root=0),
             "Reduce": lambda: comm.Reduce(send[:8], None, op=MPI.SUM, root=0),
             "Allgather": lambda: comm.Allgather(send[:8], recv),
             "Reduce_scatter_block": lambda: comm.Reduce_scatter_block(send, recv[:8], op=MPI.SUM),
             "Reduce_scatter": lambda: comm.Reduce_scatter(send, recv[:8], [8] * N, op=MPI.SUM)}
    comm.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)  # opens the native path on every rank
    comm.synchronize()
    WORLD.Barrier()
    try:
        if RANK != 0:
            start = time.monotonic()
            calls[name]()
            with pytest.raises(hpcolls.CollectiveTimeout, match=rf"timed out .* peer 0 in {SKIPPED[name]} \(one-shot\)"):
                comm.synchronize()
            with pytest.raises(hpcolls.CommunicatorBroken):
                calls[name]()
            assert time.monotonic() - start < 10
    finally:
        WORLD.Barrier()
        comm.close()


def test_capture_refuses_a_set_up_and_a_call_through_mpi(gpu):
    """A communicator's first collective on device buffers (here a Bcast) sets it up: refused in a
    capture, on every rank, the capture left valid; a call whose spec only MPI reads (a derived
    datatype) is refused too. After one call outside, the same Bcast captures and replays."""
    comm = hpcolls.Communicator(WORLD)
    stream = cupy.cuda.Stream(non_blocking=True)
    x = cupy.full(6, float(RANK))
    pair = MPI.DOUBLE.Create_contiguous(2).Commit()
    try:
        for what, call in (("first call", lambda: comm.Bcast(x, root=0, stream=stream)),
                           ("a derived datatype", lambda: comm.Bcast([x, pair], root=0, stream=stream))):
            with stream:
                stream.begin_capture()
                x += 1
                with pytest.raises(hpcolls.GraphCaptureError, match="being captured into a CUDA graph"):
                    call()
                stream.end_capture()
            if what == "first call":
                comm.Bcast(x, root=0)
        with stream:
            stream.begin_capture()
            x *= 1  # the graph is not empty at one rank either, where a Bcast moves nothing
            comm.Bcast(x, root=N - 1, stream=stream)
            graph = stream.end_capture()
        for k in range(3):
            x[...] = float(RANK + k)
            cupy.cuda.Device().synchronize()
            graph.launch(stream)
            stream.synchronize()
            assert bool(cupy.all(x == float(N - 1 + k))), f"replay {k}"
    finally:
        pair.Free()
        comm.close()


@pytest.mark.skipif(N < 2, reason="a disagreement needs two ranks")
def test_validation_sees_every_collective(gpu):
    """HPCOLLS_VALIDATE=1: ranks naming different roots raise ValidationError on every rank, before
    any kernel runs (the native entries stay off so that every call is checked)."""
    comm = hpcolls.Communicator(WORLD, validate=True)
    x = cupy.zeros(4)
    try:
        comm.Bcast(x, root=0)
        assert "Bcast" not in vars(comm)
        with pytest.raises(hpcolls.ValidationError, match="root"):
            comm.Bcast(x, root=RANK % 2)
        with pytest.raises(hpcolls.ValidationError, match="root"):
            comm.Reduce(x, cupy.zeros(4), op=MPI.SUM, root=RANK % 2)
    finally:
        comm.close()


def test_debug_info_logs_each_choice_once_with_why(gpu, capfd, monkeypatch):
    monkeypatch.setattr(log, "level", log.LEVELS["INFO"])
    comm = hpcolls.Communicator(WORLD)
    x, y = cupy.zeros(8), cupy.zeros(8 * N)
    one = MPI.DOUBLE.Create_contiguous(1).Commit()
    try:
        for _ in range(3):
            comm.Bcast(x, root=0)
            comm.Allgather(x, y)
        comm.Bcast([x, one], root=0)
        comm.synchronize()
    finally:
        one.Free()
        comm.close()
    err = capfd.readouterr().err
    kernel = SMALL_KERNEL if N in _native.SMALL_ONESHOT_RANKS else "one-shot"
    assert err.count(f"Bcast 64 B: native ({kernel}, ") == 1, err
    assert err.count(f"Allgather 64 B: native ({kernel}, ") == 1, err  # a rank's block
    assert "Bcast on device buffers: MPI (the buffer's spec is one MPI must read" in err, err


@pytest.mark.skipif(N < 4 or N % 2, reason="a 2 x N/2 process grid needs an even number of ranks, at least 4")
@pytest.mark.parametrize("protocol", ["auto", "ll"])
def test_a_process_grids_row_and_column_communicators_with_large_messages(gpu, seed, protocol):
    """The solver's pattern over a 2 x N/2 grid (solvers/backend/collectives.py): a row and a
    column communicator per rank, each its own native path on the one GPU all N ranks share; Bcasts
    of 4 MiB (the kernels in pieces) from every root and Allreduces of 3 MiB alternating between
    them, and between them Allreduces on the world of sizes from 8 B to 3 MiB, with no
    synchronization, every result against the host reference. Sized for the two ranks of a row
    rather than for the N on the GPU, their kernels timed out here and corrupted a 4-rank solve on
    2026-12-06 (docs/PERFORMANCE.md); peer_group.ranks_sharing_gpu sizes them for N. With the LL
    protocol forced (HPCOLLS_PROTOCOL=ll) the 4-rank solve at n = 8192 timed out in a world
    Allreduce on 2026-12-07 (docs/JOURNAL.md#2026-12-07-1621): the "ll" case is that pattern."""
    rows, cols = WORLD.Split(RANK // 2, RANK), WORLD.Split(RANK % 2, RANK)
    with settings.overridden({"HPCOLLS_PROTOCOL": protocol}):
        row, col, world = hpcolls.Communicator(rows), hpcolls.Communicator(cols), hpcolls.Communicator(WORLD)
        for c in (row, col, world):
            c.config  # noqa: B018 - a communicator reads the environment at its first use: now
    count = 4 * 2**20 // 8
    world_counts = (1, 513, 8192 + 3, 131072 + 5, 3 * count // 4)
    try:
        for step in range(12):
            pending = []
            for name, c, members in (("row", row, [r for r in range(N) if r // 2 == RANK // 2]),
                                     ("col", col, [r for r in range(N) if r % 2 == RANK % 2])):
                root = step % len(members)
                data = [np.random.default_rng([seed, step, r, len(members)]).standard_normal(count) for r in members]
                buf = cupy.asarray(data[root]) if c.Get_rank() == root else cupy.full(count, np.nan)
                c.Bcast(buf, root=root)
                summed = cupy.asarray(data[c.Get_rank()][: 3 * count // 4])
                c.Allreduce(MPI.IN_PLACE, summed, op=MPI.SUM)
                pending.append((f"step {step} {name} Bcast from {root}", buf, data[root]))
                pending.append((f"step {step} {name} Allreduce", summed,
                                reduce_in_rank_order(dtypes.F64, dtypes.SUM, [d[: 3 * count // 4] for d in data])))
                n = world_counts[(step + len(pending)) % len(world_counts)]
                everyone = [np.random.default_rng([seed, step, r, n]).standard_normal(n) for r in range(N)]
                mine = cupy.asarray(everyone[RANK])
                world.Allreduce(MPI.IN_PLACE, mine, op=MPI.SUM)
                pending.append((f"step {step} world Allreduce of {n}", mine,
                                reduce_in_rank_order(dtypes.F64, dtypes.SUM, everyone)))
            cupy.cuda.Device().synchronize()
            for what, got, want in pending:
                assert_bitwise(cupy.asnumpy(got), want, f"{what} (protocol {protocol})")
        for c in (row, col, world):
            c.check()
    finally:
        for c in (row, col, world):
            c.close()
        rows.Free()
        cols.Free()
