"""The MPI routes with cupy arrays on the GPU machine, whose Open MPI is not CUDA-aware: every
buffer method staged through host memory against plain mpi4py on host copies, ordered on a
stream whose kernels write the data just before; nonblocking completion by every way mpi4py
has; mpi4py's demo/cuda-aware-mpi/use_cupy.py after the one-line switch; every dtype incl.
int8/uint8/int16/uint16/bool through Allreduce and Bcast; host memory behind
__cuda_array_interface__ where a driver is installed; and the direct route's plumbing (the
stream is drained, the arrays are passed as they are) by a route-level unit that does not hand
device memory to this MPI, which would crash it."""
import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from buffer_calls import COMPLETIONS, buffer_calls, complete, copy_call  # tests/buffer_calls.py
from mpi_support import lacks
from hpcolls import methods, routes
from hpcolls.errors import InvalidBufferError
from hpcolls.staging import cuda_aware

cupy = pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD


@pytest.fixture
def staged(gpu, monkeypatch):
    """A wrapped COMM_WORLD whose device buffers take the staged route."""
    monkeypatch.setenv("HPCOLLS_MPI_CUDA_AWARE", "0")
    cuda_aware.cache_clear()
    comm = hpcolls.wrap(WORLD, algo="mpi")
    yield comm
    comm.close()
    cuda_aware.cache_clear()


@pytest.fixture
def seed():
    return WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63))


def _on_stream(stream):
    """A converter numpy -> cupy whose copy and a kernel that rewrites it run on `stream` (so the
    call must be ordered after them to see the data)."""
    def convert(a):
        with stream:
            d = cupy.asarray(a)
            d[...] = d * 1  # a kernel on the stream, after the copy
        return d
    return convert


@pytest.mark.parametrize("kind", ["pinned", "pageable"])
def test_every_buffer_call_staged_matches_mpi4py(staged, seed, kind):
    staged._staging_pool = hpcolls.staging.StagingPool(kind)
    stream = cupy.cuda.Stream(non_blocking=True)
    for case, (name, args, kwargs) in buffer_calls(WORLD.rank, WORLD.size, seed).items():
        plain_args, plain_kwargs, want = copy_call(args, kwargs, np.copy)
        dev_args, dev_kwargs, got = copy_call(args, kwargs, _on_stream(stream))
        getattr(WORLD, name)(*plain_args, **plain_kwargs)
        getattr(staged, name)(*dev_args, **dev_kwargs, stream=stream)
        with stream:
            host = [cupy.asnumpy(g, stream=stream) for g in got]
        stream.synchronize()
        for g, w in zip(host, want, strict=True):
            assert g.tobytes() == w.tobytes(), f"{kind} {case}"
    if kind == "pinned":
        assert staged.staging_pool.kind == "pinned" and staged.staging_pool._free, "no pinned block was reused"


@pytest.mark.parametrize("how", COMPLETIONS)
def test_nonblocking_calls_complete_with_copy_back(staged, seed, how):
    rng = np.random.default_rng([seed, WORLD.rank])
    x = rng.standard_normal(5)
    right, left = (WORLD.rank + 1) % WORLD.size, (WORLD.rank - 1) % WORLD.size
    got, scanned, gathered = cupy.full(6, 7.0), cupy.full(5, 7.0), cupy.full(5 * WORLD.size, 7.0)
    requests = [staged.Irecv([got, 5, MPI.DOUBLE], source=left, tag=3), staged.Isend(cupy.asarray(x), right, tag=3),
                staged.Iscan(cupy.asarray(x), scanned), staged.Iallgather(cupy.asarray(x), gathered)]
    complete(how, requests)
    want_recv, want_scan, want_gather = np.full(6, 7.0), np.zeros(5), np.zeros(5 * WORLD.size)
    MPI.Request.Waitall([WORLD.Irecv([want_recv, 5, MPI.DOUBLE], source=left, tag=3), WORLD.Isend(x, right, tag=3)])
    WORLD.Scan(x, want_scan)
    WORLD.Allgather(x, want_gather)
    for g, w in ((got, want_recv), (scanned, want_scan), (gathered, want_gather)):
        assert cupy.asnumpy(g).tobytes() == w.tobytes(), how


def test_mpi4py_use_cupy_demo_after_the_one_line_switch(staged):
    # mpi4py's demo/cuda-aware-mpi/use_cupy.py, its Send/Recv part, with comm = hpcolls.wrap(...).
    comm = staged
    size, rank = comm.Get_size(), comm.Get_rank()
    if size < 2:
        pytest.skip("the demo sends from rank 0 to rank 1")
    if rank == 0:
        buf = cupy.arange(100, dtype=cupy.float64)
        cupy.cuda.get_current_stream().synchronize()
        comm.Send(buf, dest=1, tag=88)
    elif rank == 1:
        buf = cupy.empty(100, dtype=cupy.float64)
        cupy.cuda.get_current_stream().synchronize()
        comm.Recv(buf, source=0, tag=88)
        assert cupy.allclose(buf, cupy.arange(100, dtype=cupy.float64))
    # and its Allreduce part
    sendbuf = cupy.arange(10, dtype="i")
    recvbuf = cupy.empty_like(sendbuf)
    comm.Allreduce(sendbuf, recvbuf)
    assert cupy.allclose(recvbuf, sendbuf * size)


DTYPES = ["int8", "uint8", "int16", "uint16", "bool", "int32", "int64", "uint32", "uint64", "float32", "float64",
          "complex64", "complex128"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_dtype_on_device_buffers(gpu, seed, dtype):
    comm = hpcolls.wrap(WORLD)  # the real route choice: native where it carries the type, else MPI
    rng = np.random.default_rng([seed, WORLD.rank])
    x = (rng.integers(0, 2, 9) if dtype == "bool" else rng.integers(0, 50, 9)).astype(dtype)
    ops = [MPI.LOR, MPI.LAND] if dtype == "bool" else [MPI.SUM, MPI.MAX] + (
        [MPI.BAND, MPI.BXOR] if np.dtype(dtype).kind in "iu" else [])
    if np.dtype(dtype).kind == "c":
        ops = [MPI.SUM, MPI.PROD]
    for op in ops:
        want = np.zeros_like(x)
        WORLD.Allreduce(x, want, op=op)
        got = cupy.full(x.shape, 1, dtype=dtype)
        comm.Allreduce(cupy.asarray(x), got, op=op)
        inplace = cupy.asarray(x)
        comm.Allreduce(MPI.IN_PLACE, inplace, op=op)
        cupy.cuda.get_current_stream().synchronize()
        assert cupy.asnumpy(got).tobytes() == want.tobytes(), f"{dtype} {op}"
        assert cupy.asnumpy(inplace).tobytes() == want.tobytes(), f"{dtype} {op} in place"
    b = cupy.asarray(x) if WORLD.rank == 0 else cupy.zeros_like(cupy.asarray(x))
    comm.Bcast(b, root=0)
    assert cupy.asnumpy(b).tobytes() == WORLD.bcast(x).tobytes()
    comm.close()


def test_host_memory_behind_cuda_array_interface_goes_unchanged(gpu):
    class HostCAI:
        def __init__(self, a):
            self.host = a
            self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str,
                                             "data": (a.ctypes.data, False), "version": 3}
    comm = hpcolls.wrap(WORLD)
    pinned = cupyx_pinned(4)
    for host in (np.full(4, float(WORLD.rank)), pinned):
        host[...] = WORLD.rank
        obj = HostCAI(host)
        assert hpcolls.buffers.device_array(obj) is None
        comm.Allreduce(MPI.IN_PLACE, obj, op=MPI.SUM)
        assert np.all(host == sum(range(WORLD.size)))
    comm.close()


def cupyx_pinned(n):
    import cupyx
    return cupyx.zeros_pinned(n, dtype=np.float64)


def test_persistent_calls_raise_and_nonblocking_collectives_are_complete(staged):
    with pytest.raises(InvalidBufferError, match="Send_init with a device buffer needs a CUDA-aware MPI"):
        staged.Send_init(cupy.ones(3), WORLD.rank)
    if lacks(lambda: MPI.COMM_SELF.Allreduce_init(np.ones(3), np.zeros(3))):
        # This MPI library lacks it (Open MPI 4.1): mpi4py's NotImplementedError, whatever the buffer.
        with pytest.raises(NotImplementedError, match="Allreduce_init: this MPI library has no MPI_Allreduce_init"):
            staged.Allreduce_init(cupy.ones(3), cupy.zeros(3))
    else:
        with pytest.raises(InvalidBufferError, match="Allreduce_init with a device buffer needs a CUDA-aware MPI"):
            staged.Allreduce_init(cupy.ones(3), cupy.zeros(3))
    out = cupy.zeros(3)
    request = staged.Iallreduce(cupy.ones(3), out)
    assert request.Test() and bool((out == WORLD.size).all())


def test_direct_route_drains_the_stream_and_passes_the_arrays(gpu):
    # Only the plumbing: a CUDA-aware MPI would get these arrays; this one is not, so the
    # "MPI call" here records what it was given instead of communicating.
    stream = cupy.cuda.Stream(non_blocking=True)
    x = cupy.zeros(1 << 24)
    with stream:
        for _ in range(20):
            x += 1  # seconds of queued work on the stream
    seen = []

    def mpi_call(target, *args, **kwargs):
        seen.append((stream.done, args, kwargs))
    method = methods.METHODS["Iallreduce"]
    routes.mpi_direct.call(method, mpi_call, WORLD, (x, x), {"op": MPI.SUM}, stream.ptr)
    (done, args, kwargs), = seen
    assert done, "MPI was called before the stream's earlier work was done"
    assert args[0] is x and args[1] is x and kwargs == {"op": MPI.SUM}
    assert float(x[0]) == 20.0
