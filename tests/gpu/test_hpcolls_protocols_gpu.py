"""The native protocols on the GPU machine (docs/ARCHITECTURE.md, "The protocol"): LL, sentinel
and, where its probe passed, LL128, each forced on a communicator of its own (HPCOLLS_PROTOCOL),
and auto. Every value class through every protocol, the sentinel's own patterns and every NaN
payload included, checked bitwise against the host reference and across ranks; sizes from one
element to 64 MiB at odd sizes and offsets; a CUDA graph replayed 1000 times; a random mix of
collectives, protocols, sizes and roots on one communicator (>= 10^5 calls); a rank skipping a
call: a time-out on every rank. Without a GPU every test is skipped (tests/gpu/conftest.py)."""
import time

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from allreduce_cases import assert_bitwise, digest, poison, reduce_in_rank_order
from collective_cases import stress_pattern as pattern
from hpcolls import dtypes, settings
from hpcolls.routes.native import route_of

cupy = pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD
N, RANK = WORLD.size, WORLD.rank

# native/include/hpcolls/sentinel_layout.h: the sentinel and the escape mark.
SENTINEL = 0x5A17C3E94B2D86F1
ESCAPE = 0xC3A5E1D7963B4F28
PROTOCOLS = ("ll", "sentinel", "ll128")
PLAN_NAME = {"ll": "LL", "sentinel": "sentinel", "ll128": "LL128"}
MiB = 1 << 20


def communicator(protocol, **kw):
    with settings.overridden({"HPCOLLS_PROTOCOL": protocol}):
        comm = hpcolls.Communicator(WORLD, **kw)
        comm.config  # noqa: B018 - the settings are read now, while the override holds
    return comm


@pytest.fixture(scope="module")
def comms(gpu):
    made = {p: communicator(p) for p in ("auto", *PROTOCOLS)}
    x = cupy.zeros(1)
    for c in made.values():
        c.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)  # opens every native path (collective)
    yield made
    for c in made.values():
        c.close()


def carried(comm, collective, nbytes, protocol):
    """Whether the plan runs this call on `protocol` (LL128: only where its probe passed)."""
    nc = comm.native_comm(cupy.cuda.Device().id)
    index = ("allreduce", "allgather", "bcast", "reduce", "reduce_scatter").index(collective)
    return nc.plan(nbytes, dtypes.U64, dtypes.BXOR, index)["protocol"] == PLAN_NAME[protocol]


def value_classes(count, rng, rank):
    """{name: uint64 words}: random; the sentinel only; the escape mark only; every pair of
    {S, X, random} in a chunk (each escape code); every NaN payload class of float64 and float32
    (quiet, signalling, both signs, payload bits all over); -0.0; denormals."""
    r = rng.integers(0, 2**64, size=count, dtype=np.uint64)
    s, x = np.uint64(SENTINEL), np.uint64(ESCAPE)
    pick = rng.integers(0, 3, size=count)
    mixed = np.where(pick == 0, s, np.where(pick == 1, x, r))
    nan64 = (np.uint64(0x7FF0000000000000) | (r & np.uint64(0x000FFFFFFFFFFFFF)) | np.uint64(1)) | \
        (r & np.uint64(1 << 63))
    f32 = r.view(np.uint32).copy()
    f32 = (f32 & np.uint32(0x807FFFFF)) | np.uint32(0x7F800000) | np.uint32(1)
    denormal = (r & np.uint64(0x800FFFFFFFFFFFFF))
    classes = {"random": r, "sentinel": np.full(count, s), "escape": np.full(count, x), "mixed": mixed,
               "nan64": nan64, "nan32": f32.view(np.uint64), "negative_zero": np.full(count, np.uint64(1 << 63)),
               "denormal": denormal}
    # Each rank differs (its rank in the top bits of half the words), so a wrong slot shows.
    return {k: np.where(np.arange(count) % 2 == 0, v, v ^ np.uint64(rank << 56)) for k, v in classes.items()}


def shared_rng(seed, *more):
    return np.random.default_rng([seed, *more])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_value_class_round_trips_bitwise(comms, seed, protocol):
    """Bcast and Allgather move every class of 8-byte words bit for bit (every NaN payload, words
    equal to the sentinel or the escape mark); Allreduce with BXOR and BOR on them gives the
    host's rank-order result; float64 SUM, MIN and MAX on NaN payloads, -0.0 and denormals give
    the host reference (NaN compared as NaN: the GPU's arithmetic makes them canonical)."""
    comm = comms[protocol]
    for count in (1, 2, 3, 33, 1025, 65537):
        mine = value_classes(count, shared_rng(seed, count, RANK), RANK)
        every = [value_classes(count, shared_rng(seed, count, q), q) for q in range(N)]
        for name, words in mine.items():
            what = f"{protocol} {name} x {count}"
            if carried(comm, "bcast", count * 8, protocol):
                buf = cupy.asarray(words) if RANK == N - 1 else cupy.zeros(count, np.uint64)
                comm.Bcast(buf, root=N - 1)
                assert np.array_equal(cupy.asnumpy(buf), every[N - 1][name]), f"Bcast {what}"
            if carried(comm, "allgather", count * 8, protocol):
                recv = cupy.empty(N * count, np.uint64)
                poison(recv)
                comm.Allgather(cupy.asarray(words), recv)
                want = np.concatenate([e[name] for e in every])
                assert np.array_equal(cupy.asnumpy(recv), want), f"Allgather {what}"
            if carried(comm, "allreduce", count * 8, protocol):
                for op, code in ((MPI.BXOR, dtypes.BXOR), (MPI.BOR, dtypes.BOR)):
                    recv = cupy.empty(count, np.uint64)
                    poison(recv)
                    comm.Allreduce(cupy.asarray(words), recv, op=op)
                    want = reduce_in_rank_order(dtypes.U64, code, [e[name] for e in every])
                    assert np.array_equal(cupy.asnumpy(recv), want), f"Allreduce {what} op {code}"
                for op, code in ((MPI.SUM, dtypes.SUM), (MPI.MIN, dtypes.MIN), (MPI.MAX, dtypes.MAX)):
                    recv = cupy.empty(count, np.float64)
                    comm.Allreduce(cupy.asarray(words.view(np.float64)), recv, op=op)
                    want = reduce_in_rank_order(dtypes.F64, code, [e[name].view(np.float64) for e in every])
                    assert_bitwise(cupy.asnumpy(recv), want, f"Allreduce float64 {what} op {code}")
    comm.synchronize()


SIZES = (1, 7, 4099, 262147, 2 * MiB // 8 + 3, 8 * MiB // 8 - 5, 64 * MiB // 8)


@pytest.mark.parametrize("protocol", ("auto", *PROTOCOLS))
def test_sizes_one_element_to_64_mib_at_odd_offsets(comms, seed, protocol):
    """float64 SUM Allreduce (bitwise, rank order), Allgather and Bcast of one element to 64 MiB
    (whole, or in pieces past the largest message: NCCL takes none here, as every rank checks
    rank-order bits only where the route is native), at an offset of one element, checked against
    the host and across ranks."""
    comm = comms[protocol]
    for count in SIZES:
        if protocol == "ll128" and not carried(comm, "allreduce", count * 8, protocol):
            continue
        rng = shared_rng(seed, count)
        inputs = [rng.standard_normal(count + 1) * 100 for _ in range(N)]
        send = cupy.asarray(inputs[RANK])[1:]
        space = cupy.empty(count + 1)
        poison(space)
        comm.Allreduce(send, space[1:], op=MPI.SUM)
        got = cupy.asnumpy(space[1:])
        route = route_of(comm, "Allreduce", send, space[1:], op=MPI.SUM).route
        if route in ("native", "pieces"):
            want = reduce_in_rank_order(dtypes.F64, dtypes.SUM, [x[1:] for x in inputs])
            assert_bitwise(got, want, f"{protocol} Allreduce of {count}")
        assert len(set(WORLD.allgather(digest(got)))) == 1, f"{protocol} Allreduce of {count}: ranks differ"
        block = max(1, count // N)
        recv = cupy.empty(N * block + 1)
        comm.Allgather(send[:block], recv[1:])
        assert np.array_equal(cupy.asnumpy(recv[1:]), np.concatenate([x[1:block + 1] for x in inputs])), \
            f"{protocol} Allgather of {block} per rank"
        root = count % N
        buf = space[1:]
        buf[...] = send if RANK == root else 0
        comm.Bcast(buf, root=root)
        assert np.array_equal(cupy.asnumpy(buf), inputs[root][1:]), f"{protocol} Bcast of {count} from {root}"
    comm.synchronize()


@pytest.mark.parametrize("protocol", ("sentinel", "auto"))
def test_a_graph_replayed_1000_times(comms, protocol):
    """One CUDA graph of an Allreduce, an Allgather and a Bcast in the sentinel range (and LL's,
    for auto), replayed 1000 times: every replay's results are those of the first."""
    comm = comms[protocol]
    stream = cupy.cuda.Stream(non_blocking=True)
    counts = (3, 40_000) if protocol == "auto" else (40_000,)
    with stream:
        bufs = []
        for count in counts:
            x = cupy.arange(count, dtype=cupy.float64) * (RANK + 1)
            y, g, b = cupy.empty(count), cupy.empty(N * count), cupy.arange(count, dtype=cupy.float64) + RANK
            bufs.append((x, y, g, b))
            comm.Allreduce(x, y, op=MPI.SUM, stream=stream)  # outside the capture: set-up
        stream.synchronize()
        stream.begin_capture()
        for x, y, g, b in bufs:
            comm.Allreduce(x, y, op=MPI.SUM, stream=stream)
            comm.Allgather(x, g, stream=stream)
            comm.Bcast(b, root=N - 1, stream=stream)
        graph = stream.end_capture()
        for _ in range(1000):
            graph.launch(stream)
        stream.synchronize()
    comm.synchronize()
    for (x, y, g, b), count in zip(bufs, counts):
        j = np.arange(count, dtype=np.float64)
        assert np.array_equal(cupy.asnumpy(y), j * sum(q + 1 for q in range(N)))
        assert np.array_equal(cupy.asnumpy(g), np.concatenate([j * (q + 1) for q in range(N)]))
        assert np.array_equal(cupy.asnumpy(b), j + N - 1)


def test_random_mix_of_collectives_protocols_sizes_and_roots(comms, seed):
    """>= 100,000 calls on ONE communicator, in batches of 500 without synchronization: Allreduce,
    Allgather and Bcast, its protocol switched at random before each call (the same sequence on
    every rank: the plan is read at each call), sizes log-uniform over 1..65536 elements (LL and
    sentinel ranges both), random roots; every result checked exactly."""
    comm = comms["auto"]
    nc = comm.native_comm(cupy.cuda.Device().id)
    rng = np.random.default_rng([seed, 44])
    calls, batch = 100_000, 500
    protocols = [-1, 0, 1] + ([2] if nc.region_bytes(2) else [])
    try:
        for first in range(0, calls, batch):
            sizes = np.exp(rng.uniform(0, np.log(65536), batch)).astype(np.int64) + 1
            kinds = rng.integers(0, 3, batch)
            roots = rng.integers(0, N, batch)
            chosen = rng.choice(protocols, batch)
            results = []
            for k in range(batch):
                n, call = int(sizes[k]), first + k
                j = cupy.arange(n, dtype=cupy.int64)
                mine = pattern()(cupy.int64(call), j, cupy.int64(RANK))
                nc.set_protocol(int(chosen[k]))
                if kinds[k] == 0:
                    out = cupy.full(n, cupy.nan)
                    comm.Allreduce(mine, out, op=MPI.SUM)
                    want = sum(pattern()(cupy.int64(call), j, cupy.int64(q)) for q in range(N))
                elif kinds[k] == 1:
                    out = cupy.full(N * n, cupy.nan)
                    comm.Allgather(mine, out)
                    want = cupy.concatenate([pattern()(cupy.int64(call), j, cupy.int64(q)) for q in range(N)])
                else:
                    out = mine
                    comm.Bcast(out, root=int(roots[k]))
                    want = pattern()(cupy.int64(call), j, cupy.int64(int(roots[k])))
                results.append((out, want))
            bad = sum(int(cupy.count_nonzero(out != want)) for out, want in results)
            assert bad == 0, f"batch at call {first}: {bad} wrong elements"
    finally:
        nc.set_protocol(-1)
    comm.synchronize()


@pytest.mark.skipif(N < 2, reason="a skipped call needs at least two ranks")
@pytest.mark.parametrize("protocol", ("sentinel", "ll"))
@pytest.mark.parametrize("collective", ("Allreduce", "Allgather", "Bcast"))
def test_a_rank_skipping_a_call_times_out_on_every_rank(gpu, protocol, collective):
    """Rank 0 skips one call: every other rank times out in it, and rank 0 times out in a later
    call, which its broken peers never join; nobody hangs, and every rank's communicator is then
    broken."""
    comm = communicator(protocol, timeout=1.0)
    count = 20_000  # 160 KB: past LL's range, so auto would take sentinel too
    x, g = cupy.ones(count), cupy.empty(N * count)

    def call():
        if collective == "Allreduce":
            comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        elif collective == "Allgather":
            comm.Allgather(x, g)
        else:
            comm.Bcast(x, root=N - 1)
    call()
    comm.synchronize()
    start = time.monotonic()
    if RANK != 0:  # rank 0 skips this call: its peers wait for it and give up
        with pytest.raises(hpcolls.CollectiveTimeout, match="timed out"):
            call()
            comm.synchronize()
    WORLD.Barrier()  # on the host: rank 0 goes on only once every peer has given up
    if RANK == 0:
        # Its next call may still complete on what the peers stored before they gave up; the
        # one after it has no peer left.
        with pytest.raises(hpcolls.CollectiveTimeout, match="timed out"):
            call()
            call()
            comm.synchronize()
    assert time.monotonic() - start < 15
    with pytest.raises(hpcolls.CommunicatorBroken):
        call()
    WORLD.Barrier()
    comm.close()
