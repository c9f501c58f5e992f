"""The protocol under stress on the GPU machine: many back-to-back calls of random sizes and
algorithms, CUDA-graph replays, communicators used alternately, a rank that skips a call, bad
input, the NCCL/MPI fallbacks, and the other buffer calls (Allgather, Reduce, Gather, ...) on
device buffers, staged through host memory or given to a CUDA-aware MPI."""
import time

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from buffer_calls import buffer_calls, copy_call  # tests/buffer_calls.py
from collective_cases import stress_pattern as pattern
from hpcolls.staging import cuda_aware
from hpcolls.routes.native import route_of

cupy = pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD


def expected_sum(call_ids, js, nranks):
    total = cupy.zeros(call_ids.shape, dtype=cupy.float64)
    for r in range(nranks):
        total += pattern()(call_ids, js, r)
    return total


@pytest.fixture(scope="module")
def comms(gpu):
    made = [hpcolls.Communicator(WORLD, algo=a) for a in ("oneshot", "twoshot", "auto")]
    yield made
    for c in made:
        c.close()


def test_stress_100k_back_to_back(comms):
    """>= 100,000 calls, random sizes (1..16384 elements), random algorithm and communicator,
    random in-place / out-of-place, no synchronization inside a batch of 500."""
    rng = np.random.default_rng(WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63)))
    calls, batch = 100_000, 500
    for first in range(0, calls, batch):
        sizes = np.exp(rng.uniform(0, np.log(16384), batch)).astype(np.int64) + 1
        which = rng.integers(0, len(comms), batch)
        inplace = rng.integers(0, 2, batch).astype(bool)
        offsets = np.concatenate([[0], np.cumsum(sizes)])
        call_ids = cupy.asarray(np.repeat(np.arange(first, first + batch), sizes))
        js = cupy.asarray(np.concatenate([np.arange(n) for n in sizes]))
        src = pattern()(call_ids, js, WORLD.rank)
        dst = cupy.full(src.shape, cupy.nan)
        for k in range(batch):
            a, b = offsets[k], offsets[k + 1]
            if inplace[k]:
                comms[which[k]].Allreduce(MPI.IN_PLACE, src[a:b], op=MPI.SUM)
            else:
                comms[which[k]].Allreduce(src[a:b], dst[a:b], op=MPI.SUM)
        want = expected_sum(call_ids, js, WORLD.size)
        got = cupy.where(cupy.asarray(np.repeat(inplace, sizes)), src, dst)
        bad = int(cupy.count_nonzero(got != want))
        assert bad == 0, f"batch at call {first}: {bad} wrong elements"


def test_cuda_graph_replayed_1000_times(comms):
    n = 777
    stream = cupy.cuda.Stream(non_blocking=True)
    src = cupy.empty(n)
    bufs = [cupy.empty(n) for _ in comms]
    js = cupy.arange(n, dtype=cupy.int64)
    for comm in comms:  # a communicator's first call sets it up, which a capture cannot hold
        comm.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)
    with stream:
        stream.begin_capture()
        for comm, buf in zip(comms, bufs):
            buf[...] = src
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM, stream=stream)
        graph = stream.end_capture()
        for k in range(1000):
            src[...] = pattern()(cupy.int64(k), js, WORLD.rank)
            graph.launch(stream)
            if k % 100 == 0:  # ordinary calls between replays share the device epoch
                extra = cupy.ones(5)
                comms[k % len(comms)].Allreduce(MPI.IN_PLACE, extra, op=MPI.SUM, stream=stream)
                assert float(extra.sum()) == 5 * WORLD.size
            want = expected_sum(cupy.full(n, k, dtype=cupy.int64), js, WORLD.size)
            for buf in bufs:
                assert bool(cupy.all(buf == want)), f"replay {k} wrong"
    stream.synchronize()


def test_capture_refuses_what_it_cannot_hold(gpu):
    """A communicator's first device call (its set-up) and calls through MPI cannot be captured:
    GraphCaptureError, with nothing enqueued, so the capture still ends cleanly; after one call
    outside it, the same communicator's native Allreduce captures and replays."""
    stream = cupy.cuda.Stream(non_blocking=True)
    x = cupy.ones(8)
    fresh = hpcolls.Communicator(WORLD, algo="oneshot")
    through_mpi = hpcolls.Communicator(WORLD, algo="mpi")
    try:
        through_mpi.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)  # its set-up, outside the capture
        cases = {"first call": lambda: fresh.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM, stream=stream),
                 "Allreduce through MPI": lambda: through_mpi.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM, stream=stream),
                 "Bcast through MPI": lambda: through_mpi.Bcast(x, root=0, stream=stream)}
        for what, call in cases.items():
            with stream:
                stream.begin_capture()
                x += 1  # captured work before the refused call
                with pytest.raises(hpcolls.GraphCaptureError, match="being captured into a CUDA graph"):
                    call()
                stream.end_capture()  # raises if the refused call had invalidated the capture
        fresh.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)
        y = cupy.full(8, float(WORLD.rank))
        with stream:
            stream.begin_capture()
            fresh.Allreduce(MPI.IN_PLACE, y, op=MPI.SUM, stream=stream)
            graph = stream.end_capture()
            for _ in range(3):
                y[...] = float(WORLD.rank)
                graph.launch(stream)
                assert float(y[0]) == sum(range(WORLD.size))
        stream.synchronize()
    finally:
        fresh.close()
        through_mpi.close()


def test_capture_on_one_rank_fails_the_set_up_everywhere(gpu):
    """Only the last rank captures its first call: every rank raises GraphCaptureError (the others
    naming it), none waits in the set-up, the capture stays valid, and the same communicator then
    sets up and reduces correctly outside the capture."""
    last = WORLD.size - 1
    stream = cupy.cuda.Stream(non_blocking=True)
    comm = hpcolls.Communicator(WORLD, algo="oneshot")
    x = cupy.full(8, float(WORLD.rank))
    try:
        with stream:
            if WORLD.rank == last:
                stream.begin_capture()
            try:
                with pytest.raises(hpcolls.GraphCaptureError, match=rf"rank\(s\) \[{last}\]"):
                    comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM, stream=stream)
            finally:
                if WORLD.rank == last:
                    stream.end_capture()  # raises if the refused call had invalidated the capture
        assert comm._paths.device is None, "a refused set-up left the communicator half open"
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM, stream=stream)
        stream.synchronize()
        assert bool(cupy.all(x == float(sum(range(WORLD.size))))), "the call after the refusal is wrong"
    finally:
        comm.close()


def test_capture_past_the_native_limit(gpu):
    """A message too large for the native path: its first one sets up the NCCL path, which a
    capture cannot hold (GraphCaptureError, the capture still valid). After one such call outside
    the capture, the call is captured and replays: through NCCL where it runs (one rank per GPU),
    else (ranks sharing a GPU) through the native kernels in pieces."""
    comm = hpcolls.Communicator(WORLD, algo="auto")
    stream = cupy.cuda.Stream(non_blocking=True)
    try:
        comm.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)  # the native path's set-up
        large = cupy.full(2 << 20, float(WORLD.rank))  # 16 MiB: past every native limit
        assert comm._paths.native.select(large.nbytes) < 0, "16 MiB would stay on the native path"

        def captured_call():
            with stream:
                stream.begin_capture()
                try:
                    comm.Allreduce(MPI.IN_PLACE, large, op=MPI.SUM, stream=stream)
                finally:
                    graph = stream.end_capture()  # raises if the call had invalidated the capture
            return graph

        with pytest.raises(hpcolls.GraphCaptureError, match="NCCL path"):
            captured_call()
        comm.Allreduce(MPI.IN_PLACE, large, op=MPI.SUM)  # sets the NCCL path up (or finds it off)
        want = float(sum(range(WORLD.size)))
        assert bool(cupy.all(large == want)), "the 16 MiB AllReduce outside the capture is wrong"
        route = "NCCL" if comm._paths.nccl.comm is not None else "native pieces"
        assert route_of(comm, "Allreduce", MPI.IN_PLACE, large).route == ("nccl" if route == "NCCL" else "pieces")
        graph = captured_call()
        for _ in range(3):
            with stream:  # the refill on the replay's stream: a non-blocking one does not wait for the null stream
                large[...] = float(WORLD.rank)
                graph.launch(stream)
            stream.synchronize()
            assert bool(cupy.all(large == want)), f"replayed AllReduce through {route} wrong"
    finally:
        comm.close()


def test_two_communicators_alternately(gpu):
    a = hpcolls.Communicator(WORLD)
    b = hpcolls.Communicator(WORLD.Dup())
    for k in range(2000):
        x = cupy.full(1 + k % 300, float(WORLD.rank + k))
        (a if k % 2 else b).Allreduce(MPI.IN_PLACE, x, op=MPI.MAX)
        assert float(x[0]) == WORLD.size - 1 + k
    a.close()
    b.close()


_spin = None


def spin(microseconds):
    """A one-thread kernel on the current stream that returns after `microseconds` (%globaltimer)."""
    global _spin
    if _spin is None:
        _spin = cupy.RawKernel(r"""
        extern "C" __global__ void hpcolls_test_spin(unsigned long long ns) {
          unsigned long long t0, t;
          asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
          do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
        }""", "hpcolls_test_spin")
    _spin((1,), (1,), (np.uint64(microseconds * 1000),))


@pytest.mark.skipif(WORLD.size < 2, reason="call order across ranks only matters with peers")
def test_calls_keep_their_order_across_the_callers_streams(comms):
    """Calls on one communicator run in call order whatever stream each is on. Ranks of even number
    hold each call up with a kernel on its stream that spins the longer the earlier the call is in
    a group of three, so a call on another stream that overtook the one before would pair its data
    with the peers' previous call. Streams repeat, switch, include the default one, and are
    destroyed and made anew (a new stream may get a destroyed one's handle)."""
    for comm in comms[:2]:  # one-shot, two-shot
        streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(3)] + [cupy.cuda.Stream.null]
        done = []
        for k in range(300):
            if k % 40 == 39:  # replace one of the caller's streams, after its work is done
                old = k // 40 % 3
                streams[old].synchronize()
                streams[old] = None  # destroyed before the next is made, which may get its handle
                streams[old] = cupy.cuda.Stream(non_blocking=True)
            stream = streams[(k // 2) % len(streams)]  # every stream twice in a row, then the next
            count = 1 + k % 97
            with stream:
                if WORLD.rank % 2 == 0:
                    spin(15 * (3 - k % 3))
                x = pattern()(cupy.full(count, k, dtype=cupy.int64), cupy.arange(count), WORLD.rank)
                comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
            done.append((k, count, x))
        cupy.cuda.Device().synchronize()
        for k, count, x in done:
            want = expected_sum(cupy.full(count, k, dtype=cupy.int64), cupy.arange(count), WORLD.size)
            assert bool(cupy.all(x == want)), f"call {k} ({count} elements) got another call's data"


@pytest.mark.skipif(WORLD.size < 2, reason="a skipped call needs at least two ranks")
def test_rank_skipping_a_call_times_out_not_hangs(gpu):
    comm = hpcolls.Communicator(WORLD, algo="oneshot", timeout=1.0)
    x = cupy.ones(8)
    comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)  # opens the native path everywhere
    comm.synchronize()
    if WORLD.rank != 0:
        start = time.monotonic()
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        with pytest.raises(hpcolls.CollectiveTimeout, match=r"rank \d+ timed out .* peer 0 in allreduce \(one-shot\), epoch 3"):
            comm.synchronize()
        assert time.monotonic() - start < 10
        with pytest.raises(hpcolls.CommunicatorBroken):
            comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
    WORLD.Barrier()
    comm.close()


def test_bad_input_raises_and_changes_nothing(comms):
    comm = comms[2]
    recv = cupy.arange(10, dtype=cupy.float64)
    before = recv.copy()
    cases = [
        (cupy.ones(11), recv, MPI.SUM, hpcolls.InvalidBufferError),                 # size
        (cupy.ones(10, dtype=cupy.float32), recv, MPI.SUM, hpcolls.InvalidBufferError),  # dtype
        (cupy.ones(20)[::2], recv, MPI.SUM, hpcolls.InvalidBufferError),          # strided
        (MPI.IN_PLACE, cupy.ones(4, dtype=cupy.complex128), MPI.MIN, ValueError),  # complex MIN
        (recv[2:], recv[:8], MPI.SUM, hpcolls.InvalidBufferError),                 # overlap
    ]
    for send, rbuf, op, exc in cases:
        with pytest.raises(exc):
            comm.Allreduce(send, rbuf, op=op)
    assert bool(cupy.all(recv == before))


@pytest.mark.skipif(hpcolls.device_count() < 2, reason="needs two visible GPUs for a buffer on another device")
def test_buffer_on_another_device(comms):
    comm = comms[2]
    x = cupy.ones(4)
    comm.Allreduce(MPI.IN_PLACE, x)  # binds the communicator to this rank's GPU
    other = (cupy.cuda.runtime.getDevice() + 1) % hpcolls.device_count()
    with cupy.cuda.Device(other):
        y = cupy.ones(4)
    with pytest.raises(hpcolls.InvalidBufferError, match="GPU"):
        comm.Allreduce(MPI.IN_PLACE, y)


def test_validate_mode_catches_mismatched_counts(gpu):
    comm = hpcolls.Communicator(WORLD, validate=True)
    x = cupy.ones(10 + (WORLD.rank == 0))
    if WORLD.size > 1:
        with pytest.raises(hpcolls.ValidationError, match="disagree"):
            comm.Allreduce(MPI.IN_PLACE, x)
    comm.close()


@pytest.mark.parametrize("algo", ["mpi", "nccl"])
def test_forced_fallbacks_are_correct(gpu, algo):
    comm = hpcolls.Communicator(WORLD, algo=algo)
    for code_dtype in ("float64", "complex128", "float16", "int64"):
        host = (np.arange(1000) % 17 + WORLD.rank).astype(code_dtype)
        x = cupy.asarray(host)
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        want = sum((np.arange(1000) % 17 + r).astype(code_dtype) for r in range(WORLD.size))
        assert np.array_equal(cupy.asnumpy(x), want.astype(code_dtype)), f"{algo} {code_dtype}"
    if algo == "nccl":
        shared_gpu = WORLD.size > hpcolls.device_count()
        assert (comm._paths.nccl.comm is None) == shared_gpu, comm._paths.nccl.reason
    comm.close()


def test_host_buffers_go_to_mpi_unchanged(gpu):
    comm = hpcolls.Communicator(WORLD)
    a = np.full(5, WORLD.rank, dtype=np.float64)
    b = np.empty(5)
    comm.Allreduce(a, b, op=MPI.SUM)
    assert np.all(b == sum(range(WORLD.size)))
    assert comm.native_path is None  # host buffers never open the native path


def test_bcast_of_device_buffers(gpu):
    comm = hpcolls.Communicator(WORLD)
    for n in (1, 1000, 100_000):
        x = cupy.arange(n, dtype=cupy.float64) * (WORLD.rank + 1) if WORLD.rank == 0 else cupy.full(n, cupy.nan)
        comm.Bcast(x, root=0)
        assert bool(cupy.all(x == cupy.arange(n, dtype=cupy.float64))), f"Bcast of {n} doubles"
    host = np.arange(3.0) if WORLD.rank == 0 else np.zeros(3)
    comm.Bcast(host, root=0)
    assert np.array_equal(host, np.arange(3.0))


BUFFER_CALLS = list(buffer_calls(WORLD.rank, WORLD.size, 0))


@pytest.fixture(params=["staged", "cuda-aware"])
def mpi_path(request, monkeypatch):
    """The MPI path device buffers take: staged through host memory (forced), or handed to MPI
    directly (only where MPI really is CUDA-aware: forcing it would pass device pointers to an
    MPI that dereferences them on the host)."""
    cuda_aware.cache_clear()
    if request.param == "staged":
        monkeypatch.setenv("HPCOLLS_MPI_CUDA_AWARE", "0")
        cuda_aware.cache_clear()
    elif not cuda_aware()[0]:
        pytest.skip(f"MPI is not CUDA-aware ({cuda_aware()[1]})")
    yield request.param
    cuda_aware.cache_clear()


@pytest.mark.parametrize("case", BUFFER_CALLS)
def test_buffer_calls_on_device_match_host(gpu, mpi_path, case):
    """Each call on cupy copies of random data (outputs poisoned), on a non-blocking stream,
    against plain mpi4py on host copies: every buffer, inputs included, must match. Staged, MPI
    runs the very same host call, so bytewise; a CUDA-aware MPI may reduce floating-point data
    in another order on device memory, so to 1e-12 there."""
    comm = hpcolls.Communicator(WORLD, algo="mpi")  # the MPI routes (the native ones: test_hpcolls_collectives_gpu.py)
    seed = WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63))
    name, args, kwargs = buffer_calls(WORLD.rank, WORLD.size, seed)[case]
    host_args, host_kwargs, want = copy_call(args, kwargs, np.copy)
    getattr(WORLD, name)(*host_args, **host_kwargs)
    with cupy.cuda.Stream(non_blocking=True):
        dev_args, dev_kwargs, got = copy_call(args, kwargs, cupy.asarray)
        getattr(comm, name)(*dev_args, **dev_kwargs)
        got = [cupy.asnumpy(g) for g in got]
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape, case
        if mpi_path == "staged" or w.dtype.kind not in "fc":
            assert g.tobytes() == w.tobytes(), f"{case} ({mpi_path}): {g} != {w}"
        else:
            np.testing.assert_allclose(g, w, rtol=1e-12, atol=0, err_msg=f"{case} ({mpi_path})")


def test_device_and_host_buffers_in_one_call_match_mpi4py(gpu):
    # As with mpi4py on a CUDA-aware MPI, a call may mix them: each device buffer takes its route.
    comm = hpcolls.Communicator(WORLD)
    x = np.arange(2.0) + WORLD.rank
    want = np.empty(2 * WORLD.size)
    WORLD.Allgather(x, want)
    got = np.empty(2 * WORLD.size)
    comm.Allgather(cupy.asarray(x), got)
    assert got.tobytes() == want.tobytes()
    reduced = cupy.empty(2)
    comm.Allreduce(x, reduced, op=MPI.SUM)
    assert cupy.asnumpy(reduced).tobytes() == sum(np.arange(2.0) + r for r in range(WORLD.size)).tobytes()
    comm.close()
