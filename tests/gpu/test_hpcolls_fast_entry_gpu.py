"""The native entries (native/hpcolls/fast_entry.cpp), on the GPU machine: they read cupy's current
stream as cupy does, take every common call of Allreduce, Bcast, Reduce, Allgather,
Reduce_scatter_block and Reduce_scatter themselves (arrays made any usual way, every carried
dtype and op, every root, keywords or positions, in place or not) with bitwise results, hand
every other call to the full method with that method's result or error, and go away with the
communicator."""
import gc
import weakref

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from hpcolls import _native, dtypes

from allreduce_cases import ALL_OPS, assert_bitwise, host_input, reduce_in_rank_order, reference, supported

cupy = pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD
MPI_OPS = dtypes.mpi_ops_by_code()


@pytest.fixture(scope="module")
def seed():
    return WORLD.bcast(int(np.random.SeedSequence().entropy % 2**63), root=0)


class Counted:
    """The communicator's methods of every native entry bound to `comm`, counting per method the
    calls the native code hands them (`by_name`; `calls`: all of them)."""

    def __init__(self, comm):
        self.comm = comm
        self.by_name = dict.fromkeys(_native.FAST_ENTRIES, 0)

    @property
    def calls(self):
        return sum(self.by_name.values())

    def method(self, name):
        def handed(*args, **kwargs):
            self.by_name[name] += 1
            return getattr(type(self.comm), name)(self.comm, *args, **kwargs)
        return handed


@pytest.fixture
def counted(gpu):
    """A one-shot communicator, open, whose native entries hand the calls they do not take to a
    counter (then the real method)."""
    comm = hpcolls.Communicator(WORLD, algo="oneshot")
    comm.Allreduce(MPI.IN_PLACE, cupy.ones(1), op=MPI.SUM)
    assert set(_native.FAST_ENTRIES) <= set(vars(comm)), "the native entries were not installed on opening"
    full = Counted(comm)
    comm._install_fast({name: full.method(name) for name in _native.FAST_ENTRIES})
    yield comm, full
    comm.close()


def test_stream_reader_matches_cupy(gpu):
    """The stream the native code launches on is cupy's current stream, however it was set."""
    def check(what):
        assert _native.cupy_current_stream() == cupy.cuda.get_current_stream().ptr, what

    check("default")
    with cupy.cuda.Stream() as s:
        check("with Stream()")
        with cupy.cuda.Stream(non_blocking=True):
            check("nested non-blocking")
        assert _native.cupy_current_stream() == s.ptr, "after the inner stream ended"
    with cupy.cuda.Stream.null:
        check("Stream.null")
    with cupy.cuda.Stream.ptds:
        check("Stream.ptds")
    s = cupy.cuda.Stream(non_blocking=True)
    s.use()
    try:
        check("Stream.use()")
    finally:
        cupy.cuda.Stream.null.use()
    check("back to default")
    if int(cupy.__version__.split(".")[0]) in (13, 14):  # the cupy versions whose C entry we know
        assert _native.cupy_stream_reader().endswith("(C)"), _native.cupy_stream_reader()


def test_installed_on_open_and_dropped_on_close(gpu):
    comm = hpcolls.Communicator(WORLD, algo="oneshot")
    assert not set(_native.FAST_ENTRIES) & set(vars(comm)), "installed before the native path opened"
    x = cupy.full(3, float(WORLD.rank))
    comm.Bcast(x, root=0)  # any collective the kernels carry opens the path
    for name in _native.FAST_ENTRIES:
        assert type(vars(comm)[name]).__name__ == "builtin_function_or_method", name
    comm.close()
    assert not set(_native.FAST_ENTRIES) & set(vars(comm)), "still installed after close()"
    ref = weakref.ref(comm)
    del comm
    gc.collect()
    assert ref() is None, "a closed communicator is kept alive (reference cycle not collected)"


def test_off_with_validate(gpu):
    comm = hpcolls.Communicator(WORLD, algo="oneshot", validate=True)
    comm.Allreduce(MPI.IN_PLACE, cupy.ones(2), op=MPI.SUM)
    assert not set(_native.FAST_ENTRIES) & set(vars(comm)), "validation must see every call"
    comm.close()


def test_a_subclass_s_own_method_is_kept(gpu):
    class Mine(hpcolls.Communicator):
        def Bcast(self, buf, root=0, stream=None):
            self.seen = True
            return hpcolls.Communicator.Bcast(self, buf, root, stream=stream)

    comm = Mine(WORLD, algo="oneshot")
    comm.Allreduce(MPI.IN_PLACE, cupy.ones(2), op=MPI.SUM)
    assert "Allreduce" in vars(comm) and "Bcast" not in vars(comm)
    comm.Bcast(cupy.ones(2))
    assert comm.seen
    comm.close()


def test_common_calls_stay_native(counted, seed):
    """Every carried dtype x op, in place and out of place, positions and keywords, op left out,
    arrays made the usual ways, on the default and on a non-blocking current stream: bitwise
    against the rank-order reference, and none of it handed to the Python method."""
    comm, full = counted
    count = 33
    for dtype, code in dtypes.numpy_code_pairs():
        for op in ALL_OPS:
            if not supported(code, op):
                continue
            want = reference(code, op, count, seed, WORLD.size)
            host = host_input(code, op, count, seed, WORLD.rank)
            what = f"{dtypes.NAMES[code]} {dtypes.OP_NAMES[op]}"
            send = cupy.asarray(host)
            recv = cupy.full(count, 7, dtype=dtype)
            comm.Allreduce(send, recv, MPI_OPS[op])
            assert_bitwise(cupy.asnumpy(recv), want, what + " positional")
            assert_bitwise(cupy.asnumpy(send), host, what + " send buffer modified")
            recv = cupy.array(host, dtype=dtype.name)  # dtype given by name
            comm.Allreduce(recvbuf=recv, sendbuf=MPI.IN_PLACE, op=MPI_OPS[op], stream=None)
            assert_bitwise(cupy.asnumpy(recv), want, what + " keywords, in place")
    want = reference(dtypes.F64, dtypes.SUM, count, seed, WORLD.size)
    host = host_input(dtypes.F64, dtypes.SUM, count, seed, WORLD.rank)
    for how, x in arrays_made_the_usual_ways(host).items():
        comm.Allreduce(MPI.IN_PLACE, x)  # op left out: SUM
        assert_bitwise(cupy.asnumpy(x), want, f"array from {how}")
    with cupy.cuda.Stream(non_blocking=True) as s:
        x = cupy.asarray(host)
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)
        got = cupy.asnumpy(x, stream=s)
        s.synchronize()
    assert_bitwise(got, want, "on a non-blocking current stream")
    for how, stream in explicit_streams().items():
        x = cupy.asarray(host)
        cupy.cuda.Device().synchronize()  # x is written on the current stream; the call runs on `stream`
        comm.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM, stream=stream)
        cupy.cuda.Device().synchronize()
        assert_bitwise(cupy.asnumpy(x), want, f"stream={how}")
    assert full.calls == 0, f"{full.calls} common calls were handed to the Python method"


CODES_OF_EVERY_SIZE = (dtypes.F64, dtypes.I8, dtypes.F16, dtypes.C128, dtypes.BOOL)


def some_op(code):
    return dtypes.LXOR if code == dtypes.BOOL else dtypes.SUM


def test_every_collective_s_common_call_stays_native(counted, seed):
    """Bcast (every root, positions and keywords), Reduce (every root, in place at the root, the
    receive buffer None elsewhere), Allgather, Reduce_scatter_block and Reduce_scatter (counts
    that differ, one empty), in place and not, for a type of every element size: bitwise against
    the host reference in rank order, and none of it handed to the Python methods."""
    comm, full = counted
    n, rank, count = WORLD.size, WORLD.rank, 37
    for code in CODES_OF_EVERY_SIZE:
        op = some_op(code)
        mpi_op, name = MPI_OPS[op], dtypes.NAMES[code]
        inputs = [host_input(code, op, n * count, seed + code, r) for r in range(n)]
        mine = inputs[rank]
        for root in range(n):
            x = cupy.asarray(mine[:count]) if rank == root else cupy.zeros(count, dtype=mine.dtype)
            comm.Bcast(x, root) if root % 2 else comm.Bcast(buf=x, root=root)
            assert_bitwise(cupy.asnumpy(x), inputs[root][:count], f"Bcast {name} from {root}")
            want = reduce_in_rank_order(code, op, [i[:count] for i in inputs])
            send, recv = cupy.asarray(mine[:count]), cupy.zeros(count, dtype=mine.dtype) if rank == root else None
            comm.Reduce(send, recv, mpi_op, root)
            if rank == root:
                assert_bitwise(cupy.asnumpy(recv), want, f"Reduce {name} to {root}")
                recv = cupy.asarray(mine[:count])
            comm.Reduce(MPI.IN_PLACE if rank == root else send, recv, op=mpi_op, root=root)
            if rank == root:
                assert_bitwise(cupy.asnumpy(recv), want, f"Reduce {name} to {root} in place")
        gathered = np.concatenate([i[:count] for i in inputs])
        recv = cupy.zeros(n * count, dtype=mine.dtype)
        comm.Allgather(cupy.asarray(mine[:count]), recv)
        assert_bitwise(cupy.asnumpy(recv), gathered, f"Allgather {name}")
        recv[rank * count:(rank + 1) * count] = cupy.asarray(mine[:count])
        comm.Allgather(sendbuf=MPI.IN_PLACE, recvbuf=recv)
        assert_bitwise(cupy.asnumpy(recv), gathered, f"Allgather {name} in place")
        total = reduce_in_rank_order(code, op, inputs)
        recv = cupy.zeros(count, dtype=mine.dtype)
        comm.Reduce_scatter_block(cupy.asarray(mine), recv, mpi_op)
        assert_bitwise(cupy.asnumpy(recv), total[rank * count:(rank + 1) * count], f"Reduce_scatter_block {name}")
        inout = cupy.asarray(mine)
        comm.Reduce_scatter_block(MPI.IN_PLACE, inout, op=mpi_op)
        assert_bitwise(cupy.asnumpy(inout[:count]), total[rank * count:(rank + 1) * count],
                       f"Reduce_scatter_block {name} in place")
        counts = [count] + [0 if r == 1 else (5 * r) % count for r in range(1, n)]  # block 0 the largest, one empty
        first = sum(counts[:rank])
        part = reduce_in_rank_order(code, op, [i[:sum(counts)] for i in inputs])[first:first + counts[rank]]
        recv = cupy.zeros(counts[rank], dtype=mine.dtype)
        comm.Reduce_scatter(cupy.asarray(mine[:sum(counts)]), recv, counts, mpi_op)
        assert_bitwise(cupy.asnumpy(recv), part, f"Reduce_scatter {name} counts {counts}")
        inout = cupy.asarray(mine[:sum(counts)])
        comm.Reduce_scatter(MPI.IN_PLACE, inout, recvcounts=tuple(counts), op=mpi_op)
        assert_bitwise(cupy.asnumpy(inout[:counts[rank]]), part, f"Reduce_scatter {name} in place")
    assert full.calls == 0, f"common calls handed to the Python methods: {full.by_name}"


def test_other_calls_of_each_collective_go_to_their_method(counted, seed):
    """A spec, host arrays, recvcounts left out, a message past the native limit, an in-place
    Reduce_scatter the kernels refuse: each reaches its method once, with the right result."""
    comm, full = counted
    n, rank = WORLD.size, WORLD.rank
    base = [np.arange(64, dtype=np.int64) * (r + 1) for r in range(n)]

    def handed(name, call):
        before = full.by_name[name]
        call()
        cupy.cuda.Device().synchronize()
        assert full.by_name[name] == before + 1, f"{name}: not handed to the method"

    x = cupy.asarray(base[rank])
    handed("Bcast", lambda: comm.Bcast([x, MPI.INT64_T], root=n - 1))
    assert np.array_equal(cupy.asnumpy(x), base[n - 1])
    out = np.zeros(4 * n, np.int64)
    handed("Allgather", lambda: comm.Allgather(base[rank][:4], out))  # host arrays: mpi4py's
    assert np.array_equal(out, np.concatenate([b[:4] for b in base]))
    if n > 1:  # alone, a Bcast moves nothing whatever its size, and the entry takes it
        big = comm._paths.native.plan(1 << 30, dtypes.U8, dtypes.SUM, 2)["piece_bytes"] + 5  # past the largest Bcast
        y = cupy.full(big, rank, dtype=cupy.uint8)
        handed("Bcast", lambda: comm.Bcast(y, root=0))
        assert bool(cupy.all(y == 0)), "a Bcast past the native limit"
    counts = [3] * n
    recv = cupy.zeros(3, dtype=cupy.int64)
    handed("Reduce_scatter", lambda: comm.Reduce_scatter(cupy.asarray(base[rank][:3 * n]), recv))  # counts left out
    assert np.array_equal(cupy.asnumpy(recv), sum(b[:3 * n] for b in base)[3 * rank:3 * rank + 3])
    if n > 1:
        counts = [1] + [2] * (n - 1)  # in place, block 1 outgrows block 0: the kernels refuse it
        inout = cupy.asarray(base[rank][:sum(counts)])
        handed("Reduce_scatter", lambda: comm.Reduce_scatter(MPI.IN_PLACE, inout, counts))
        first = sum(counts[:rank])
        assert np.array_equal(cupy.asnumpy(inout[:counts[rank]]),
                              sum(b[:sum(counts)] for b in base)[first:first + counts[rank]])


def explicit_streams():
    """Explicit stream= arguments the native entry reads itself (an integer handle, or an integer
    `ptr`), as the Python method would."""
    s = cupy.cuda.Stream(non_blocking=True)
    return {"cupy Stream": s, "its integer handle": s.ptr, "Stream.null": cupy.cuda.Stream.null,
            "Stream.ptds": cupy.cuda.Stream.ptds, "0 (the legacy default stream)": 0}


def arrays_made_the_usual_ways(host):
    """Device copies of `host` made as user code makes arrays: their dtype objects must still
    be the ones the native code matches by identity."""
    filled = cupy.empty(host.shape, dtype=host.dtype.str)
    filled[...] = cupy.asarray(host)
    return {"asarray": cupy.asarray(host),
            "arithmetic": cupy.asarray(host) * 1,
            "astype copy": cupy.asarray(host).astype(host.dtype.name, copy=True),
            "empty by dtype string, then filled": filled,
            "contiguous slice": cupy.asarray(np.concatenate([host, host]))[:host.size]}


def test_other_calls_go_to_the_method(counted, seed):
    """Everything else reaches the method once, unchanged, with its result or its error."""
    comm, full = counted
    count = 10
    want = reference(dtypes.F64, dtypes.SUM, count, seed, WORLD.size)
    host = host_input(dtypes.F64, dtypes.SUM, count, seed, WORLD.rank)
    stream = cupy.cuda.Stream(non_blocking=True)

    class CudaStreamAttribute:  # read by the method (its second choice after `ptr`), not natively
        cuda_stream = stream.ptr

    results = {
        "stream with cuda_stream, no ptr":
            lambda r: comm.Allreduce(MPI.IN_PLACE, r, op=MPI.SUM, stream=CudaStreamAttribute()),
        "[buf, MPI.DOUBLE]": lambda r: comm.Allreduce(MPI.IN_PLACE, [r, MPI.DOUBLE], op=MPI.SUM),
        "numpy arrays": None,
    }
    for what, call in results.items():
        before = full.calls
        if call is None:
            r = host.copy()
            comm.Allreduce(MPI.IN_PLACE, r, op=MPI.SUM)
            got = r
        else:
            r = cupy.asarray(host)
            call(r)
            stream.synchronize()
            got = cupy.asnumpy(r)
        assert full.calls == before + 1, what
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=what)
    recv = cupy.arange(count, dtype=cupy.float64)
    errors = [
        ((cupy.ones(count + 1), recv), {}, hpcolls.InvalidBufferError, "size"),
        ((cupy.ones(count, dtype=cupy.float32), recv), {}, hpcolls.InvalidBufferError, "dtype"),
        ((cupy.ones(2 * count)[::2], recv), {}, hpcolls.InvalidBufferError, "strided send"),
        ((MPI.IN_PLACE, cupy.ones(2 * count)[::2]), {}, hpcolls.InvalidBufferError, "strided recv"),
        ((MPI.IN_PLACE, cupy.ones(4, dtype=cupy.complex128)), {"op": MPI.MIN}, ValueError, "complex MIN"),
        ((recv[2:], recv[:8]), {}, hpcolls.InvalidBufferError, "overlap"),
        ((MPI.IN_PLACE, recv, MPI.SUM, None, 5), {}, TypeError, "five arguments"),
        ((MPI.IN_PLACE, recv, MPI.SUM, None), {}, TypeError, "stream by position (keyword-only)"),
        ((MPI.IN_PLACE, recv), {"opp": MPI.SUM}, TypeError, "unknown keyword"),
        ((MPI.IN_PLACE, recv, MPI.SUM), {"op": MPI.SUM}, TypeError, "op twice"),
        ((MPI.IN_PLACE,), {}, TypeError, "no recvbuf"),
        ((MPI.IN_PLACE, recv), {"stream": "s"}, TypeError, "a string as stream"),
        ((MPI.IN_PLACE, recv), {"stream": -1}, ValueError, "a negative stream handle"),
    ]
    before = recv.copy()
    for args, kwargs, exc, what in errors:
        calls = full.calls
        with pytest.raises(exc):
            comm.Allreduce(*args, **kwargs)
        assert full.calls == calls + 1, f"{what}: not handed to the method"
    assert bool(cupy.all(recv == before)), "a refused call changed the receive buffer"


def test_back_to_back_varying_sizes(counted, seed):
    """Many calls of varying sizes and types through the native entry, no host sync between."""
    comm, full = counted
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 5000, size=400)
    codes = [code for _, code in dtypes.numpy_code_pairs()]
    pending = []
    for k, count in enumerate(sizes):
        code = codes[k % len(codes)]
        op = ALL_OPS[k % len(ALL_OPS)]
        if not supported(code, op):
            op = min(dtypes.OPS_OF[code])
        x = cupy.asarray(host_input(code, op, int(count), seed + k, WORLD.rank))
        comm.Allreduce(MPI.IN_PLACE, x, MPI_OPS[op])
        pending.append((x, code, op, int(count), seed + k))
    for x, code, op, count, s in pending:
        assert_bitwise(cupy.asnumpy(x), reference(code, op, count, s, WORLD.size),
                       f"{dtypes.NAMES[code]} {dtypes.OP_NAMES[op]} count={count}")
    assert full.calls == 0


def test_torch_tensors_go_to_the_method(counted, seed):
    torch = pytest.importorskip("torch", reason="torch tensors are tested where torch is installed")
    comm, full = counted
    host = host_input(dtypes.F32, dtypes.SUM, 17, seed, WORLD.rank)
    t = torch.as_tensor(host, device=f"cuda:{cupy.cuda.Device().id}")
    comm.Allreduce(MPI.IN_PLACE, t, op=MPI.SUM)
    torch.cuda.synchronize()
    assert_bitwise(t.cpu().numpy(), reference(dtypes.F32, dtypes.SUM, 17, seed, WORLD.size), "torch float32")
    assert full.calls == 1
