"""Buffer calls of hpcolls.Communicator with host buffers of every kind (numpy, array.array,
__cuda_array_interface__ over host memory, DLPack on the CPU, bytes with datatype specs): every
call must give exactly what plain mpi4py gives, and make no CUDA call.

The staging of device buffers through host memory needs a GPU (its copies are CUDA copies): it
is tested in tests/gpu/test_hpcolls_protocol_gpu.py and tests/gpu/test_hpcolls_routes_gpu.py with the same calls
(tests/buffer_calls.py).
"""
import array
import sys
import types

import numpy as np
import pytest
from mpi4py import MPI

import hpcolls
from buffer_calls import buffer_calls, copy_call
from hpcolls import buffers
from hpcolls.staging import cuda_aware

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


class HostCAI:
    """Host memory behind __cuda_array_interface__ (as mpi4py's own fake-GPU test arrays are)."""

    def __init__(self, a):
        self.host = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
                                         "version": 3}


class HostDLPack:
    """Host memory behind DLPack only (no buffer protocol)."""

    def __init__(self, a):
        self.host = a
        self.__dlpack__, self.__dlpack_device__ = a.__dlpack__, a.__dlpack_device__


def as_array_array(a):
    """array.array of the same bytes (None for complex types, which array.array lacks)."""
    return None if a.dtype.kind == "c" else array.array(a.dtype.char, a.tobytes())


HOST_KINDS = {  # kind -> (numpy array -> object, object -> numpy view of its memory)
    "array.array": (as_array_array, lambda o: np.frombuffer(o, dtype=o.typecode)),
    "cuda-array-interface-on-host": (lambda a: HostCAI(a.copy()), lambda o: o.host),
    "dlpack-cpu": (lambda a: HostDLPack(a.copy()), lambda o: o.host),
    "bytearray-spec": (None, None),  # below: [bytearray, MPI type] specs
}


class CudaUnreachable(types.ModuleType):
    """Stands in for hpcolls._native: any use of it (a CUDA call) fails the test."""

    def __getattr__(self, name):
        raise AssertionError(f"hpcolls made a CUDA call (_native.{name}) for host buffers")


@pytest.fixture
def no_cuda(monkeypatch):
    """hpcolls' CUDA entry points unreachable for the test."""
    blocked = CudaUnreachable("hpcolls._native")
    monkeypatch.setitem(sys.modules, "hpcolls._native", blocked)
    monkeypatch.setattr(hpcolls, "_native", blocked, raising=False)
    cuda_aware.cache_clear()
    yield
    cuda_aware.cache_clear()


@pytest.mark.parametrize("kind", [k for k in HOST_KINDS if k != "bytearray-spec"])
def test_host_buffers_of_every_kind_reach_mpi4py_with_no_cuda_call(comm, wrapped, seed, kind, no_cuda):
    convert, view = HOST_KINDS[kind]
    if kind == "cuda-array-interface-on-host" and buffers.cuda_driver_installed():
        pytest.skip("a CUDA driver is installed: telling host from device memory behind __cuda_array_interface__ "
                    "asks CUDA there (tests/gpu/test_hpcolls_routes_gpu.py covers it)")
    done = 0
    for case, (name, args, kwargs) in buffer_calls(comm.rank, comm.size, seed).items():
        _, _, originals = copy_call(args, kwargs, np.copy)
        if any(convert(a) is None for a in originals):
            continue  # a type this kind cannot hold (the same on every rank)
        plain_args, plain_kwargs, want = copy_call(args, kwargs, np.copy)
        kind_args, kind_kwargs, got = copy_call(args, kwargs, convert)
        getattr(comm, name)(*plain_args, **plain_kwargs)
        getattr(wrapped, name)(*kind_args, **kind_kwargs)
        for g, w in zip(got, want, strict=True):
            assert view(g).tobytes() == w.tobytes(), f"{kind} {case}"
        done += 1
    assert done >= len(CALLS) // 2


def test_host_bytes_with_datatype_specs_match_mpi4py(comm, wrapped, seed, no_cuda):
    x = np.random.default_rng([seed, comm.rank]).standard_normal(4)
    want, got = bytearray(32 * comm.size), bytearray(32 * comm.size)
    comm.Allgather([bytearray(x.tobytes()), MPI.DOUBLE], [want, MPI.DOUBLE])
    wrapped.Allgather([bytearray(x.tobytes()), MPI.DOUBLE], [got, MPI.DOUBLE])
    assert got == want and np.frombuffer(got)[4 * comm.rank:4 * comm.rank + 4].tobytes() == x.tobytes()
