"""The buffer calls hpcolls.Communicator wraps besides Allreduce (Allgather, Alltoall, Reduce,
Reduce_scatter(_block), Gather, Scatter, Bcast, Send, Recv, Sendrecv), with host buffers: every
call must give exactly what plain mpi4py gives. And the checks made on device buffers before any
data moves (mixed host/device pairs, point-to-point without a CUDA-aware MPI), which need no GPU.

The staging of device buffers through host memory needs a GPU (its copies are CUDA copies): it
is tested in tests/gpu/test_protocol_gpu.py with the same calls (tests/buffer_calls.py).
"""
import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from buffer_calls import buffer_calls, copy_call
from hpcolls.errors import InvalidBufferError
from hpcolls.mpi_support import cuda_aware

WORLD = MPI.COMM_WORLD
CALLS = list(buffer_calls(WORLD.rank, WORLD.size, 0))


@pytest.fixture
def wrapped(comm):
    c = hpcolls.wrap(comm)
    yield c
    c.close()


@pytest.fixture
def seed(comm):
    return comm.bcast(int(np.random.SeedSequence().entropy % 2**63))


def same_bytes(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("case", CALLS)
def test_buffer_call_matches_mpi4py(comm, wrapped, seed, case):
    name, args, kwargs = buffer_calls(comm.rank, comm.size, seed)[case]
    plain_args, plain_kwargs, want = copy_call(args, kwargs, np.copy)
    wrapped_args, wrapped_kwargs, got = copy_call(args, kwargs, np.copy)
    getattr(comm, name)(*plain_args, **plain_kwargs)
    assert getattr(wrapped, name)(*wrapped_args, **wrapped_kwargs) is None
    for g, w in zip(got, want, strict=True):
        assert same_bytes(g, w), f"{case}: {g} != {w}"


@pytest.mark.skipif(WORLD.size < 2, reason="Send/Recv between two ranks needs two ranks")
def test_send_recv_match_mpi4py(comm, wrapped, seed):
    partner = comm.rank ^ 1
    if partner >= comm.size:  # the odd one out of an odd rank count
        return
    x = np.random.default_rng([seed, comm.rank]).standard_normal(5)
    results = []
    for c in (comm, wrapped):
        got, status = np.full(6, -1.0), MPI.Status()
        if comm.rank % 2 == 0:
            c.Send(x, partner, tag=4)
            c.Recv([got, 5, MPI.DOUBLE], source=partner, tag=4, status=status)
        else:
            c.Recv([got, 5, MPI.DOUBLE], partner, 4, status)
            c.Send(buf=[x, MPI.DOUBLE], dest=partner, tag=4)
        assert (status.Get_source(), status.Get_tag()) == (partner, 4)
        results.append(got)
    assert same_bytes(results[0], results[1]) and results[1][5] == -1.0


class HostMemoryCAI:
    """Host memory behind __cuda_array_interface__: hpcolls.buffers takes it for a device buffer
    (it looks only at the pointer), so the checks hpcolls makes before any data moves can be
    tested without a GPU. These tests only use it where hpcolls must raise, or must leave it to
    mpi4py as an argument MPI ignores."""

    def __init__(self, n):
        self.host = np.zeros(n)
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "<f8", "data": (self.host.ctypes.data, False),
                                         "version": 3}


needs_native = pytest.mark.skipif(not hpcolls.native_available(),
                                  reason="hpcolls._native not built: it is what resolves a device pointer")


@pytest.fixture
def not_cuda_aware(monkeypatch):
    monkeypatch.setenv("HPCOLLS_MPI_CUDA_AWARE", "0")
    cuda_aware.cache_clear()
    yield
    cuda_aware.cache_clear()


@needs_native
def test_mixed_host_and_device_buffers_raise(comm, wrapped):
    dev, host, me = HostMemoryCAI(4 * comm.size), np.zeros(4 * comm.size), comm.rank
    calls = {  # root = this rank, so every rank is the root and raises without communicating
        "Allgather": (dev, host), "Alltoall": (host, dev), "Reduce_scatter_block": (dev, host),
        "Reduce_scatter": (host, dev), "Reduce": (dev, host, MPI.SUM, me), "Gather": (host, dev, me),
        "Scatter": (dev, host, me), "Sendrecv": (dev, me, 0, host, me),
    }
    for name, args in calls.items():
        which = "send buffer is on the GPU but receive" if args[0] is dev else "receive buffer is on the GPU but send"
        with pytest.raises(InvalidBufferError, match=f"{name}: {which} buffer in host memory"):
            getattr(wrapped, name)(*args)


@needs_native
def test_buffers_mpi_ignores_do_not_count(comm, wrapped):
    # Off the root, Gather's receive and Scatter's send buffer are not used: a device one there
    # next to a host buffer is no mixed pair, and mpi4py gets the call unchanged.
    root, k = comm.size - 1, 2
    at_root = comm.rank == root
    gathered = np.zeros(k * comm.size) if at_root else HostMemoryCAI(k * comm.size)
    wrapped.Gather(np.full(k, float(comm.rank)), gathered, root=root)
    if at_root:
        assert np.array_equal(gathered, np.repeat(np.arange(comm.size, dtype=float), k))
    part = np.zeros(k)
    wrapped.Scatter(np.repeat(np.arange(comm.size, dtype=float), k) if at_root else HostMemoryCAI(3), part, root)
    assert np.all(part == comm.rank)


@needs_native
def test_point_to_point_device_buffers_need_cuda_aware_mpi(comm, wrapped, not_cuda_aware):
    dev, me = HostMemoryCAI(3), comm.rank
    for name, call in (("Send", lambda: wrapped.Send(dev, dest=me)),
                       ("Recv", lambda: wrapped.Recv(dev, source=me, tag=1)),
                       ("Sendrecv", lambda: wrapped.Sendrecv(dev, me, recvbuf=HostMemoryCAI(3), source=me))):
        with pytest.raises(InvalidBufferError, match=f"{name} with a device buffer needs a CUDA-aware MPI.*host memory"):
            call()
