"""mpi4py's own buffer calls with cupy arrays on an MPI that is not CUDA-aware, through hpcolls'
PMPI staging library (LD_PRELOAD=$(python -m hpcolls preload)): MPI.Message.Probe + Recv,
comm.Mprobe + Message.Irecv + Wait, comm.Improbe + Recv, Datatype.Pack/Unpack (with a vector type
too), Pack_external/Unpack_external and Op.Reduce_local, of int8/int32/float64/complex128 arrays of
0, 1, 7 and 4099 elements, every output poisoned first, compared byte for byte (receive statuses
too) with the same calls on host arrays in the same run (tests/pmpi_staging_calls.py makes both).
Run at 2 ranks: tests/gpu_steps/open_issues.steps."""
import pytest
from mpi4py import MPI

from gpu_required import cupy_with_a_gpu
from hpcolls.staging import cuda_aware, pmpi_library
from pmpi_staging_calls import CupyBuffers, HostBuffers, records  # tests/pmpi_staging_calls.py

cupy = cupy_with_a_gpu()
WORLD = MPI.COMM_WORLD


@pytest.fixture
def preloaded():
    """The library is in front of MPI here; else, on an MPI that is not CUDA-aware, the calls
    would hand device pointers to MPI and crash the rank: fail and say how to run it instead."""
    aware, how = cuda_aware()
    if not pmpi_library.active() and not aware:
        pytest.fail(f"MPI is not CUDA-aware ({how}) and the PMPI staging library is not preloaded: run with "
                    f"{pmpi_library.HOW_TO_PRELOAD}")
    return aware


def test_library_is_preloaded_where_mpi_is_not_cuda_aware(preloaded):
    assert preloaded or pmpi_library.active()


def test_mpi4py_calls_on_cupy_arrays_match_host_arrays_bitwise(gpu, preloaded):
    host = records(HostBuffers(), WORLD)
    device = records(CupyBuffers(cupy), WORLD)
    assert [label for label, _ in device] == [label for label, _ in host]
    wrong = [label for (label, got), (_, want) in zip(device, host) if got != want]
    assert not wrong, f"rank {WORLD.rank}: cupy results differ from host results in {wrong[:10]} ({len(wrong)} in all)"
    # Every rank got there: a rank that crashed or raised would leave the others waiting here.
    assert WORLD.allreduce(len(device)) == WORLD.size * len(host)
