"""How the native route reads each collective's mpi4py arguments (hpcolls/routes/collectives.py),
on this machine without a GPU: "device" buffers are host arrays that hpcolls is told are device
memory (tests/pretend_device.py). What a call becomes for the kernels (addresses, the count and
type the plan is about, op, root, blocks, in place), which calls go to MPI and why, and which
raise; every rank reads its own call, at every root. The launches themselves need a GPU
(tests/gpu/test_hpcolls_collectives_gpu.py)."""
import numpy as np
import pytest
from mpi4py import MPI

from hpcolls import buffers, dtypes
from hpcolls.errors import InvalidBufferError
from hpcolls.methods import METHODS
from hpcolls.routes.collectives import COLLECTIVES, DeviceCall
from pretend_device import PretendDevice


@pytest.fixture(autouse=True)
def device(monkeypatch):
    monkeypatch.setattr(buffers, "_pointer_is_device", lambda ptr: (True, 0))


def read(comm, name, *args, **kwargs):
    return COLLECTIVES[name].read(comm, METHODS[name], args, kwargs)


def dev(a):
    return PretendDevice(np.ascontiguousarray(a))


def ptr(d):
    return d.memory.ctypes.data


def test_allreduce_reads_type_op_and_in_place(comm):
    x, y = dev(np.zeros(5)), dev(np.zeros(5))
    assert read(comm, "Allreduce", x, y) == DeviceCall(ptr(x), ptr(y), 5, dtypes.F64, dtypes.SUM, 0, False)
    assert read(comm, "Allreduce", MPI.IN_PLACE, y, MPI.MAX) == DeviceCall(ptr(y), ptr(y), 5, dtypes.F64, dtypes.MAX,
                                                                          0, True)
    assert read(comm, "Allreduce", y, y).in_place  # the same buffer twice is in place, as in mpi4py
    got = read(comm, "Allreduce", [x, 3, MPI.DOUBLE], [y, 3, MPI.DOUBLE], op=MPI.PROD)
    assert (got.count, got.code, got.op) == (3, dtypes.F64, dtypes.PROD)
    ints = dev(np.zeros(8, np.int8))
    assert read(comm, "Allreduce", MPI.IN_PLACE, [ints, MPI.INT16_T], MPI.BXOR).code == dtypes.I16
    assert read(comm, "Allreduce", MPI.IN_PLACE, dev(np.zeros(3, np.bool_)), MPI.LXOR).code == dtypes.BOOL


@pytest.mark.parametrize("name", ["Allreduce", "Reduce", "Reduce_scatter_block"])
def test_reductions_leave_to_mpi_what_the_kernels_do_not_carry(comm, name):
    n = comm.Get_size()
    x, y = dev(np.zeros(2 * n)), dev(np.zeros(2 * n if name != "Reduce_scatter_block" else 2))
    user = MPI.Op.Create(lambda a, b, t: None, commute=True)
    try:
        for op in (MPI.MINLOC, user, MPI.BAND):
            assert "not a pair the kernels carry" in read(comm, name, x, y, op)
    finally:
        user.Free()
    assert "host memory" in read(comm, name, np.zeros(2 * n), y)
    assert "MPI must read" in read(comm, name, dev(np.zeros(2 * n, np.longdouble)),
                                   dev(np.zeros(y.memory.size, np.longdouble)))
    assert "MPI must read" in read(comm, name, [x, 2 * n, 0, MPI.DOUBLE], y)


@pytest.mark.parametrize("name", ["Allreduce", "Reduce"])
def test_pairs_without_meaning_raise(comm, name):
    with pytest.raises(ValueError, match="not supported for float16"):
        read(comm, name, MPI.IN_PLACE if name == "Allreduce" else dev(np.zeros(3, np.float16)),
             dev(np.zeros(3, np.float16)), MPI.BAND)
    with pytest.raises(ValueError, match="not defined for complex"):
        read(comm, name, dev(np.zeros(3, np.complex64)), dev(np.zeros(3, np.complex64)), MPI.MAX)
    if name == "Allreduce" or comm.Get_rank() == 0:  # Reduce reads the receive buffer at the root only
        with pytest.raises(InvalidBufferError, match="do not match"):
            read(comm, name, dev(np.zeros(4)), dev(np.zeros(3)))
        with pytest.raises(InvalidBufferError, match="do not match"):
            read(comm, name, dev(np.zeros(3, np.float32)), dev(np.zeros(3)))


@pytest.mark.parametrize("dtype", [np.float64, np.int16, np.bool_, np.complex128, np.longdouble, np.uint8])
def test_bcast_moves_the_bytes_of_any_type_from_every_root(comm, dtype):
    buf = dev(np.zeros(7, dtype))
    for root in range(comm.Get_size()):
        assert read(comm, "Bcast", buf, root) == DeviceCall(ptr(buf), ptr(buf), buf.memory.nbytes, dtypes.U8,
                                                            dtypes.SUM, 0, True, root)


def test_bcast_specs(comm):
    buf = dev(np.zeros(6))
    assert read(comm, "Bcast", [buf, MPI.DOUBLE]).count == 48
    assert read(comm, "Bcast", [buf, 2, MPI.DOUBLE]).count == 16
    assert read(comm, "Bcast", [buf, MPI.BYTE]).count == 48
    assert read(comm, "Bcast", [buf, 3, MPI.INT]).count == 12
    contiguous = MPI.DOUBLE.Create_contiguous(2).Commit()
    try:
        for spec in ([buf, MPI.DOUBLE_INT], [buf, contiguous], [buf, (2, 1), MPI.DOUBLE], [buf, 2, 1, MPI.DOUBLE],
                     [buf, "d"]):
            assert "MPI must read" in read(comm, "Bcast", spec), spec
    finally:
        contiguous.Free()
    assert "is not a rank" in read(comm, "Bcast", buf, comm.Get_size())
    assert "host memory" in read(comm, "Bcast", np.zeros(3))
    with pytest.raises(InvalidBufferError, match="exceeds"):
        read(comm, "Bcast", [buf, 7, MPI.DOUBLE])


def test_reduce_reads_the_receive_buffer_at_the_root_only(comm):
    rank = comm.Get_rank()
    x, y = dev(np.zeros(4, np.int32)), dev(np.zeros(4, np.int32))
    for root in range(comm.Get_size()):
        got = read(comm, "Reduce", x, y if rank == root else None, MPI.MIN, root)
        want_recv = ptr(y) if rank == root else ptr(x)
        assert got == DeviceCall(ptr(x), want_recv, 4, dtypes.I32, dtypes.MIN, 0, False, root)
        if rank == root:
            assert read(comm, "Reduce", MPI.IN_PLACE, y, root=root).in_place
        else:
            assert "IN_PLACE off the root" in read(comm, "Reduce", MPI.IN_PLACE, y, root=root)
            assert read(comm, "Reduce", x, np.zeros(9), root=root).recv == ptr(x)  # any receive buffer: not read


def test_allgather_reads_a_block_per_rank(comm):
    n, rank = comm.Get_size(), comm.Get_rank()
    x, y = dev(np.zeros(3)), dev(np.zeros(3 * n))
    assert read(comm, "Allgather", x, y) == DeviceCall(ptr(x), ptr(y), 24, dtypes.U8, dtypes.SUM, 0, False)
    assert read(comm, "Allgather", MPI.IN_PLACE, y) == DeviceCall(ptr(y) + 24 * rank, ptr(y), 24, dtypes.U8,
                                                                  dtypes.SUM, 0, True)
    longer = dev(np.zeros(3 * n + 2))  # a count per rank given: the tail is not the call's
    assert read(comm, "Allgather", [x, 3, MPI.DOUBLE], [longer, 3, MPI.DOUBLE]).count == 24
    assert read(comm, "Allgather", dev(np.zeros(6, np.int32)), y).count == 24  # same bytes, other type
    if n > 1:
        assert "MPI says" in read(comm, "Allgather", dev(np.zeros(2)), y)
        assert "MPI must read" in read(comm, "Allgather", x, dev(np.zeros(3 * n + 1)))


def test_reduce_scatter_block_reads_blocks(comm):
    n = comm.Get_size()
    x, y = dev(np.zeros(5 * n)), dev(np.zeros(5))
    assert read(comm, "Reduce_scatter_block", x, y) == DeviceCall(ptr(x), ptr(y), 5, dtypes.F64, dtypes.SUM, 0,
                                                                  False, counts=(5,) * n)
    got = read(comm, "Reduce_scatter_block", MPI.IN_PLACE, x, MPI.PROD)
    assert (got.send, got.count, got.counts, got.in_place) == (ptr(x), 5, (5,) * n, True)
    assert COLLECTIVES["Reduce_scatter_block"].refusal(got) is None
    with pytest.raises(InvalidBufferError, match="do not match"):
        read(comm, "Reduce_scatter_block", dev(np.zeros(5 * n + 1)), y)


def test_reduce_scatter_reads_counts(comm):
    n, rank = comm.Get_size(), comm.Get_rank()
    counts = [1 + (r % 3) for r in range(n)]
    x, y = dev(np.zeros(sum(counts), np.int64)), dev(np.zeros(counts[rank], np.int64))
    got = read(comm, "Reduce_scatter", x, y, counts, MPI.BOR)
    assert got == DeviceCall(ptr(x), ptr(y), max(counts), dtypes.I64, dtypes.BOR, 0, False, counts=tuple(counts))
    assert got.displs == [sum(counts[:r]) for r in range(n)]
    assert read(comm, "Reduce_scatter", x, y).counts == tuple(counts)  # recvcounts=None: gathered, as mpi4py does
    assert "MPI says" in read(comm, "Reduce_scatter", MPI.IN_PLACE, x)
    assert "one count per rank" in read(comm, "Reduce_scatter", x, y, counts + [1])
    with pytest.raises(InvalidBufferError, match="for a block of"):
        read(comm, "Reduce_scatter", x, dev(np.zeros(counts[rank] + 1, np.int64)), counts)


def test_in_place_reduce_scatter_is_refused_where_a_block_outgrows_block_0(comm):
    """In place the result overwrites the input from the receive buffer's start: the kernel keeps
    that inside block 0 only, so a larger block sends the call elsewhere (NCCL or MPI), on every
    rank alike."""
    n = comm.Get_size()
    scatter = COLLECTIVES["Reduce_scatter"]
    for counts in ([3] * n, [3] + [2] * (n - 1), [2] * (n - 1) + [3]):
        got = read(comm, "Reduce_scatter", MPI.IN_PLACE, dev(np.zeros(sum(counts))), counts)
        outgrown = max(counts) > counts[0]
        assert (scatter.refusal(got) is not None) == outgrown, counts
