"""The staged MPI route's plumbing, on this machine without a GPU: "device" buffers are host
arrays that hpcolls is told are device memory, and CUDA's copies are memmove. What runs for
real is everything else: the method table, the staging of each buffer into pool memory in the
spec's place, real MPI on the staged copies, the copy back of blocking calls, of nonblocking
requests by every way of completing them (a request's buffers are let go by mpi4py at
completion), of matched receives, and the refusals. On a GPU the same calls run on cupy arrays
with CUDA's copies (tests/gpu/test_hpcolls_routes_gpu.py)."""
import ctypes
import types

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from buffer_calls import COMPLETIONS, buffer_calls, complete, copy_call
from mpi_support import lacks, skip_lacking
from hpcolls import buffers, routes
from hpcolls.errors import InvalidBufferError
from hpcolls.staging import cuda_aware, pmpi_library
from pretend_device import PretendDevice


@pytest.fixture
def pretend(monkeypatch):
    """(wrapped communicator, copies made): PretendDevice pointers count as device memory, the
    MPI is not CUDA-aware, the native module's copies are memmove, its scratch cannot be made
    (the native path is off), and every call that reaches mpi4py is checked to hold no
    PretendDevice."""
    copies = []
    # The PMPI library (mpi_has, the CUDA-awareness rule) is found beside hpcolls._native: opened
    # again before the pretend module below hides where that is (an earlier test's pretend module
    # may have left it not found).
    pmpi_library._library.cache_clear()
    pmpi_library._library()

    def memcpy(dst, src, nbytes, stream):
        copies.append((dst, src, nbytes, stream))
        ctypes.memmove(dst, src, nbytes)

    def no_scratch(*args):
        raise RuntimeError("no GPU here: the pretend device memory has no scratch to share")

    # The native path's set-up runs for real and finds no scratch, so every rank agrees that it
    # is off; the native route then hands each call on (NCCL is not there either).
    native = types.SimpleNamespace(memcpy=memcpy, stream_synchronize=lambda s: None, stream_is_capturing=lambda s: False,
                                   MAX_RANKS=32, device_info=lambda d: {"uuid": "pretend"}, NativeComm=no_scratch)
    monkeypatch.setitem(__import__("sys").modules, "hpcolls._native", native)
    monkeypatch.setattr(hpcolls, "_native", native, raising=False)
    monkeypatch.setattr(buffers, "_pointer_is_device", lambda ptr: (True, 0))
    monkeypatch.setenv("HPCOLLS_MPI_CUDA_AWARE", "0")
    cuda_aware.cache_clear()
    staged = routes.mpi_staged.call

    def checked(pool, method, base, target, args, kwargs, device, unused, stream):
        def mpi4py_call(t, *a, **k):
            for value in (*a, *k.values()):
                held = buffers.array_of(value)
                assert not isinstance(held, PretendDevice), f"{method.name} got a device buffer"
            return base(t, *a, **k)
        return staged(pool, method, mpi4py_call, target, args, kwargs, device, unused, stream)

    monkeypatch.setattr(routes.mpi_staged, "call", checked)
    comm = hpcolls.wrap(MPI.COMM_WORLD)
    yield comm, copies
    cuda_aware.cache_clear()


@pytest.fixture
def seed(comm):
    return comm.bcast(int(np.random.SeedSequence().entropy % 2**63))


def test_every_blocking_call_is_staged_and_matches_mpi4py(comm, pretend, seed):
    wrapped, copies = pretend
    for case, (name, args, kwargs) in buffer_calls(comm.rank, comm.size, seed).items():
        plain_args, plain_kwargs, want = copy_call(args, kwargs, np.copy)
        dev_args, dev_kwargs, got = copy_call(args, kwargs, lambda a: PretendDevice(a.copy()))
        copies.clear()
        getattr(comm, name)(*plain_args, **plain_kwargs)
        getattr(wrapped, name)(*dev_args, **dev_kwargs, stream=5)
        for g, w in zip(got, want, strict=True):
            assert g.memory.tobytes() == w.tobytes(), case
        assert copies and all(stream == 5 for *_, stream in copies), f"{case}: the copies are not on the stream"


def _pair(comm, seed, n=5):
    rng = np.random.default_rng([seed, comm.rank])
    return rng.standard_normal(n), (comm.rank + 1) % comm.size, (comm.rank - 1) % comm.size


@pytest.mark.parametrize("how", COMPLETIONS)
def test_nonblocking_requests_copy_back_however_they_complete(comm, pretend, seed, how):
    wrapped, _ = pretend
    x, right, left = _pair(comm, seed)
    got = PretendDevice(np.full(6, 7.0))
    scanned = PretendDevice(np.full(5, 7.0))
    gathered = PretendDevice(np.full(5 * comm.size, 7.0))
    requests = [wrapped.Irecv([got, 5, MPI.DOUBLE], source=left, tag=3),
                wrapped.Isend(PretendDevice(x.copy()), right, tag=3),
                wrapped.Iscan(PretendDevice(x.copy()), scanned, op=MPI.SUM),
                wrapped.Iallgather(PretendDevice(x.copy()), gathered)]
    complete(how, requests)
    want_recv, want_scan, want_gather = np.full(6, 7.0), np.zeros(5), np.zeros(5 * comm.size)
    MPI.Request.Waitall([comm.Irecv([want_recv, 5, MPI.DOUBLE], source=left, tag=3), comm.Isend(x, right, tag=3)])
    comm.Scan(x, want_scan)
    comm.Allgather(x, want_gather)
    assert got.memory.tobytes() == want_recv.tobytes() and got.memory[5] == 7.0
    assert scanned.memory.tobytes() == want_scan.tobytes()
    assert gathered.memory.tobytes() == want_gather.tobytes()
    assert wrapped.staging_pool._free or wrapped.staging_pool.kind == "pageable"


def test_sendrecv_replace_matched_receive_and_vector_calls(comm, pretend, seed):
    wrapped, _ = pretend
    x, right, left = _pair(comm, seed)
    buf = PretendDevice(x.copy())
    wrapped.Sendrecv_replace(buf, right, 1, left, 1)
    want = x.copy()
    comm.Sendrecv_replace(want, right, 1, left, 1)
    assert buf.memory.tobytes() == want.tobytes()

    request = wrapped.Isend(PretendDevice(x.copy()), right, tag=9)
    message = wrapped.Mprobe(source=left, tag=9)
    got = PretendDevice(np.zeros(5))
    message.Recv(got)
    request.Wait()
    comm.Sendrecv_replace(want := x.copy(), right, 9, left, 9)
    assert got.memory.tobytes() == want.tobytes()

    counts = [1 + r for r in range(comm.size)]
    mine = PretendDevice(np.full(counts[comm.rank], float(comm.rank)))
    out = PretendDevice(np.zeros(sum(counts)))
    wrapped.Iallgatherv(mine, [out, counts]).Wait()
    assert np.array_equal(out.memory, np.repeat(np.arange(comm.size, dtype=float), counts))


def test_allreduce_the_native_kernels_do_not_carry_goes_to_mpi(comm, pretend, seed):
    # A user-defined op on int8, uint16 and float64 device buffers, and BAND/LOR on types that
    # are not native (long double): the MPI route, staged, equal to plain mpi4py.
    wrapped, _ = pretend
    rng = np.random.default_rng([seed, comm.rank])
    for dtype in (np.int8, np.uint16, np.float64):
        def larger(inbuf, inoutbuf, datatype, dtype=dtype):
            a, b = np.frombuffer(inbuf, dtype), np.frombuffer(inoutbuf, dtype)
            np.maximum(a, b, out=b)
        op = MPI.Op.Create(larger, commute=True)
        x = rng.integers(0, 100, 7).astype(dtype)
        want, got = np.zeros_like(x), PretendDevice(np.zeros_like(x))
        comm.Allreduce(x, want, op=op)
        wrapped.Allreduce(PretendDevice(x.copy()), got, op=op)
        op.Free()
        assert got.memory.tobytes() == want.tobytes(), np.dtype(dtype).name
    x = rng.standard_normal(3).astype(np.longdouble)
    want, got = np.zeros_like(x), PretendDevice(np.zeros_like(x))
    comm.Allreduce(x, want, op=MPI.MAX)
    wrapped.Allreduce(PretendDevice(x.copy()), got, op=MPI.MAX)
    assert got.memory.tobytes() == want.tobytes()


def test_small_integer_and_bool_allreduce_with_the_native_path_off_goes_to_mpi(comm, pretend, seed, monkeypatch):
    # HPCOLLS_ALGO=mpi: int8/uint8/int16/uint16 and bool device buffers, which the native kernels
    # carry, go to MPI with their own MPI datatype (staged), never to the host rank-order
    # reduction that float16/bfloat16 need; the result equals plain mpi4py's, bit for bit.
    def no_host_reduction(*args):
        raise AssertionError("the float16/bfloat16 host reduction was used")
    monkeypatch.setattr(routes.native, "reduce_rank_order", no_host_reduction)
    wrapped = hpcolls.wrap(comm, algo="mpi")
    rng = np.random.default_rng([seed, comm.rank])
    cases = [(t, op) for t in (np.int8, np.uint8, np.int16, np.uint16)
             for op in (MPI.SUM, MPI.PROD, MPI.MIN, MPI.MAX, MPI.BAND, MPI.BOR, MPI.BXOR)]
    cases += [(np.bool_, op) for op in (MPI.LAND, MPI.LOR, MPI.LXOR)]
    try:
        for dtype, op in cases:
            x = rng.integers(0, 200, 9).astype(dtype)
            want, got = np.zeros_like(x), PretendDevice(np.ones_like(x))
            comm.Allreduce(x, want, op=op)
            wrapped.Allreduce(PretendDevice(x.copy()), got, op=op)
            assert got.memory.tobytes() == want.tobytes(), (np.dtype(dtype).name, op)
            in_place = PretendDevice(x.copy())
            wrapped.Allreduce(MPI.IN_PLACE, in_place, op=op)
            assert in_place.memory.tobytes() == want.tobytes(), (np.dtype(dtype).name, op, "in place")
        assert wrapped.native_path is None or "HPCOLLS_ALGO=mpi" in str(wrapped.native_path)
    finally:
        wrapped.close()


def test_persistent_calls_cannot_be_staged_and_say_so(comm, pretend):
    # A call the MPI library lacks (Open MPI 4.1: MPI-4's persistent collectives) raises mpi4py's
    # NotImplementedError instead, with any buffer; the test then skips naming it, after the rest.
    wrapped, _ = pretend
    lacking = set()
    host, device = (lambda: np.zeros(3)), (lambda: PretendDevice(np.zeros(3)))
    for name, call in (("Send_init", lambda c, make: c.Send_init(make(), c.Get_rank())),
                       ("Recv_init", lambda c, make: c.Recv_init(make(), c.Get_rank())),
                       ("Allreduce_init", lambda c, make: c.Allreduce_init(make(), make())),
                       ("Bcast_init", lambda c, make: c.Bcast_init(make()))):
        if lacks(lambda: call(MPI.COMM_SELF, host)):
            lacking.add(name)
            with pytest.raises(NotImplementedError, match=f"{name}: this MPI library has no MPI_{name}"):
                call(wrapped, device)
            with pytest.raises(NotImplementedError):
                call(wrapped, host)  # host buffers: mpi4py's own error
            continue
        with pytest.raises(InvalidBufferError, match=f"{name} with a device buffer needs a CUDA-aware MPI"):
            call(wrapped, device)
    if "Bcast_init" not in lacking:
        host = wrapped.Bcast_init(np.zeros(3))  # host buffers: mpi4py's own persistent request
        host.Free()
    skip_lacking(lacking, what="refused for staging")


def test_a_buffer_mpi_ignores_is_not_handed_over(comm, pretend):
    wrapped, _ = pretend
    root = comm.size - 1
    x = np.full(2, float(comm.rank))
    gathered = PretendDevice(np.zeros(2 * comm.size))  # read only at the root
    wrapped.Gather(x, gathered, root=root)
    want = np.repeat(np.arange(comm.size, dtype=float), 2) if comm.rank == root else np.zeros(2 * comm.size)
    assert np.array_equal(gathered.memory, want)
