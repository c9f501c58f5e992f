"""hpcolls' C entry called from another extension (solvers._kernels.column_allreduce, the column
AllReduce of sytrd's native loop): the same bits as hpcolls' own Allreduce on the same data, a
message past the native path left alone (the caller falls back), and a freed communicator's
handle answering hpcolls.CommunicatorBroken. Run under mpiexec with 1, 2, 4 ranks (MPS)."""
import numpy as np
import pytest

from gpu_required import cupy_with_a_gpu

cupy = cupy_with_a_gpu()
_kernels = pytest.importorskip("solvers._kernels", reason="solvers._kernels not built (nvcc at install)")

from mpi4py import MPI  # noqa: E402

import hpcolls  # noqa: E402
from hpcolls import c_api  # noqa: E402
from solver_testing import shared_seed  # noqa: E402

WORLD = MPI.COMM_WORLD


def _open(device):
    """An hpcolls communicator over the world and its C-entry handle (the test skips where the
    native path is off)."""
    c = hpcolls.Communicator(WORLD.Dup())  # Free() frees it: never COMM_WORLD itself
    handle = c_api.comm_capsule(c, device)
    if handle is None:
        c.Free()
        pytest.skip(f"hpcolls' native path is off here: {c.native_path}")
    return c, handle


@pytest.fixture
def comm(gpu):
    c, handle = _open(gpu)
    yield c, handle, gpu
    c.Free()


def _data(rng, count, dtype):
    x = rng.standard_normal(count)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(count)
    return x.astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_c_entry_allreduce_equals_hpcolls_allreduce_bitwise(comm, dtype):
    c, handle, device = comm
    rng = np.random.default_rng([shared_seed(WORLD), WORLD.Get_rank()])
    stream = cupy.cuda.get_current_stream()
    for count in (1, 2, 7, 33, 255, 1000, 4099):
        host = _data(rng, count, dtype)
        through_entry = cupy.asarray(host)
        through_hpcolls = through_entry.copy()
        launched = _kernels.column_allreduce(handle, device, WORLD.Get_size(), through_entry.data.ptr, count,
                                             _kernels.DTYPES[dtype], stream.ptr)
        assert launched, f"count {count}: the native path did not take it"
        c.Allreduce(MPI.IN_PLACE, through_hpcolls, op=MPI.SUM)
        stream.synchronize()
        got = cupy.asnumpy(through_entry)
        assert got.tobytes() == cupy.asnumpy(through_hpcolls).tobytes(), f"count {count}: bits differ"
        want = np.sum(WORLD.allgather(host.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)),
                      axis=0)
        eps = float(np.finfo(dtype).eps)
        assert np.allclose(got, want, rtol=8 * eps, atol=8 * eps * WORLD.Get_size()), f"count {count}: wrong sum"
        assert len(set(WORLD.allgather(got.tobytes()))) == 1, f"count {count}: ranks differ"


def test_a_message_past_the_native_path_is_left_to_the_caller(comm):
    c, handle, device = comm
    largest = c.native_comm(device).largest_message()
    count = largest // 8 + 2
    x = cupy.full(count, float(WORLD.Get_rank() + 1))
    launched = _kernels.column_allreduce(handle, device, WORLD.Get_size(), x.data.ptr, count,
                                         _kernels.DTYPES["float64"], cupy.cuda.get_current_stream().ptr)
    assert launched is False
    assert bool((x == WORLD.Get_rank() + 1).all()), "the buffer changed although nothing was launched"


def test_a_freed_communicators_handle_says_so(gpu):
    c, handle = _open(gpu)
    c.Free()   # the handle keeps the native half alive, broken
    x = cupy.ones(4)
    with pytest.raises(hpcolls.CommunicatorBroken, match="freed"):
        _kernels.column_allreduce(handle, gpu, WORLD.Get_size(), x.data.ptr, 4, _kernels.DTYPES["float64"],
                                  cupy.cuda.get_current_stream().ptr)


def test_the_handle_must_match_the_call(comm):
    c, handle, device = comm
    x = cupy.ones(4)
    with pytest.raises(ValueError, match=f"has {WORLD.Get_size()} ranks on GPU {device}"):
        _kernels.column_allreduce(handle, device, WORLD.Get_size() + 1, x.data.ptr, 4, _kernels.DTYPES["float64"],
                                  cupy.cuda.get_current_stream().ptr)
