"""The native Allgather (NativeComm.allgather, native/include/hpcolls/allgather/oneshot.cuh) on the
GPU machine, called on the native object directly (the Communicator's routing to it is not
written yet): every block size from 1 byte to the largest the native path takes, odd sizes and
unaligned buffers, in place and out, bitwise against the blocks every rank computes for itself
and equal across ranks; bytes outside the result untouched; 1000 replays of a CUDA graph; a
100,000-call random mix with Allreduce on two communicators used alternately; a rank skipping a
call times out instead of hanging."""
import time

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls

from allreduce_cases import digest

cupy = pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD
GUARD = 16  # bytes after the result that must stay as they were


def block(seed, rank, nbytes, tag=0):
    """Rank `rank`'s block: random bytes, a pure function of its arguments."""
    return np.random.default_rng([seed, rank, nbytes, tag]).integers(0, 256, nbytes, dtype=np.uint8)


def everyone(seed, nbytes, tag=0):
    return np.concatenate([block(seed, r, nbytes, tag) for r in range(WORLD.size)])


@pytest.fixture(scope="module")
def seed():
    return WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63), root=0)


def native_comm(**kw):
    comm = hpcolls.Communicator(WORLD, algo="oneshot", **kw)
    comm.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)  # opens the native path
    comm.synchronize()
    assert comm.native_path == "on", comm.native_path
    return comm


@pytest.fixture(scope="module")
def comm(gpu):
    c = native_comm()
    yield c
    c.close()


def allgather(nc, nbytes, mine, inplace, offset=0, stream=0):
    """One native Allgather of `mine` (host bytes) into a fresh, poisoned receive buffer that
    starts `offset` bytes into its allocation; returns (result, guard bytes after it)."""
    total = WORLD.size * nbytes
    space = cupy.full(offset + total + GUARD, 0xA5, dtype=cupy.uint8)
    recv = space[offset:offset + total]
    if inplace:
        recv[WORLD.rank * nbytes:(WORLD.rank + 1) * nbytes] = cupy.asarray(mine)
        send_ptr = recv.data.ptr + WORLD.rank * nbytes
    else:
        send = cupy.asarray(mine)
        send_ptr = send.data.ptr
    assert nc.allgather(send_ptr, recv.data.ptr, nbytes, 0, stream) == 0, f"{nbytes} B not taken"
    cupy.cuda.Device().synchronize()
    nc.check()
    return cupy.asnumpy(recv), cupy.asnumpy(space[offset + total:])


def test_every_size_in_place_and_not(comm, seed):
    nc = comm._native
    largest = nc.largest_allgather()
    assert largest > 0 and largest % 16 == 0
    sizes = list(range(1, 50)) + [255, 256, 4095, 4096, 4097, 65537, largest - 1, largest]
    for nbytes in sizes:
        for inplace in (False, True):
            for offset in ((0, 3) if nbytes < 5000 else (0,)):
                got, guard = allgather(nc, nbytes, block(seed, WORLD.rank, nbytes), inplace, offset)
                what = f"{nbytes} B per rank, inplace={inplace}, offset {offset}"
                want = everyone(seed, nbytes)
                bad = np.flatnonzero(got != want)
                assert bad.size == 0, f"{what}: {bad.size} bytes wrong, first at {bad[0]}"
                assert np.all(guard == 0xA5), f"{what}: bytes after the result written"
                assert len(set(WORLD.allgather(digest(got)))) == 1, f"{what}: ranks differ"
    x = cupy.zeros(WORLD.size * (largest + 16), dtype=cupy.uint8)
    assert nc.allgather(x.data.ptr, x.data.ptr, largest + 16, 0, 0) == -1, "a block past the limit was taken"
    assert nc.allgather(x.data.ptr, x.data.ptr, 0, 0, 0) == 0  # nothing to move


def test_pieces_through_the_stride(comm, seed):
    """A block larger than the largest one, as pieces: each piece's blocks at recv + q * stride."""
    nc = comm._native
    piece = nc.largest_allgather()
    nbytes = 2 * piece + 37
    mine = cupy.asarray(block(seed, WORLD.rank, nbytes, tag=1))
    recv = cupy.full(WORLD.size * nbytes, 0xA5, dtype=cupy.uint8)
    for first in range(0, nbytes, piece):
        n = min(piece, nbytes - first)
        assert nc.allgather(mine.data.ptr + first, recv.data.ptr + first, n, nbytes, 0) == 0
    assert np.array_equal(cupy.asnumpy(recv), everyone(seed, nbytes, tag=1))


def test_overlap_and_bad_stride_raise(comm):
    nc = comm._native
    x = cupy.zeros(WORLD.size * 64 + 64, dtype=cupy.uint8)
    with pytest.raises(ValueError, match="stride is smaller"):
        nc.allgather(x.data.ptr, x.data.ptr, 64, 32, 0)
    if WORLD.size > 1:
        wrong = x.data.ptr + ((WORLD.rank + 1) % WORLD.size) * 64  # another rank's block
        with pytest.raises(ValueError, match="overlaps"):
            nc.allgather(wrong, x.data.ptr, 64, 0, 0)


def test_cuda_graph_replayed_1000_times(gpu, seed):
    """A graph of (x += 1; allgather x) replayed 1000 times: replay k's result is every rank's
    block plus k + 1 (mod 256), read back after every replay."""
    comm = native_comm()
    nc = comm._native
    nbytes = 777
    base = [block(seed, r, nbytes, tag=2) for r in range(WORLD.size)]
    x = cupy.asarray(base[WORLD.rank])
    recv = cupy.zeros(WORLD.size * nbytes, dtype=cupy.uint8)
    stream = cupy.cuda.Stream(non_blocking=True)
    cupy.cuda.Device().synchronize()  # x and recv are written on the default stream
    with stream:
        stream.begin_capture()
        x += 1
        nc.allgather(x.data.ptr, recv.data.ptr, nbytes, 0, stream.ptr)
        graph = stream.end_capture()
    try:
        for k in range(1000):
            graph.launch(stream)
            stream.synchronize()
            want = np.concatenate([(b + np.uint8((k + 1) % 256)).astype(np.uint8) for b in base])
            assert np.array_equal(cupy.asnumpy(recv), want), f"replay {k}"
        nc.check()
    finally:
        comm.close()


def test_stress_100k_mixed_with_allreduce_on_two_communicators(gpu):
    """100,000 calls at random: Allgather (1..4096 bytes per rank, in place or not) and float64
    SUM Allreduce (1..2048 elements), each on one of two communicators chosen at random, no
    synchronization inside a batch of 500; every result checked against its own inputs."""
    comms = [native_comm(), native_comm()]
    fill = cupy.ElementwiseKernel("int64 call, int64 j, int64 rank", "uint8 x",
                                  "x = (unsigned char)((call * 131 + j * 7 + rank * 29) % 251);",
                                  "hpcolls_test_allgather_fill")
    rng = np.random.default_rng(WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63)))
    try:
        calls, batch = 100_000, 500
        for first in range(0, calls, batch):
            pending = []
            for k in range(first, first + batch):
                c = comms[int(rng.integers(0, 2))]
                if rng.integers(0, 2):
                    nbytes = int(rng.integers(1, 4097))
                    inplace = bool(rng.integers(0, 2))
                    recv = cupy.empty(WORLD.size * nbytes, dtype=cupy.uint8)
                    own = recv[WORLD.rank * nbytes:(WORLD.rank + 1) * nbytes]
                    send = own if inplace else cupy.empty(nbytes, dtype=cupy.uint8)
                    fill(k, cupy.arange(nbytes), WORLD.rank, send)
                    assert c._native.allgather(send.data.ptr, recv.data.ptr, nbytes, 0, 0) == 0
                    pending.append(("allgather", k, nbytes, recv, send))
                else:
                    count = int(rng.integers(1, 2049))
                    x = cupy.full(count, float(k % 1000 + WORLD.rank))
                    c.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
                    pending.append(("allreduce", k, count, x, None))
            cupy.cuda.Device().synchronize()
            for what, k, n, result, _ in pending:
                if what == "allreduce":
                    want = sum(float(k % 1000 + r) for r in range(WORLD.size))
                    assert bool(cupy.all(result == want)), f"call {k}: allreduce of {n}"
                else:
                    want = cupy.empty(WORLD.size * n, dtype=cupy.uint8)
                    for r in range(WORLD.size):
                        fill(k, cupy.arange(n), r, want[r * n:(r + 1) * n])
                    assert bool(cupy.all(result == want)), f"call {k}: allgather of {n} B per rank"
        for c in comms:
            c._native.check()
    finally:
        for c in comms:
            c.close()


@pytest.mark.skipif(WORLD.size < 2, reason="a skipped call needs at least two ranks")
def test_rank_skipping_an_allgather_times_out_not_hangs(gpu):
    comm = native_comm(timeout=1.0)
    nc = comm._native
    x = cupy.zeros(WORLD.size * 8, dtype=cupy.uint8)
    comm.synchronize()
    WORLD.Barrier()
    if WORLD.rank != 0:
        start = time.monotonic()
        nc.allgather(x.data.ptr + 8 * WORLD.rank, x.data.ptr, 8, 0, 0)
        with pytest.raises(hpcolls.CollectiveTimeout, match=r"timed out .* peer 0 in allgather \(one-shot\)"):
            comm.synchronize()
        assert time.monotonic() - start < 10
    WORLD.Barrier()
    comm.close()
