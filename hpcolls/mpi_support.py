"""Is the MPI library CUDA-aware? Detected, never assumed.

Order: HPCOLLS_MPI_CUDA_AWARE=0/1 overrides; else Open MPI's and MPICH's run-time query
MPIX_Query_cuda_support() looked up in the MPI library this process already loaded (mpi4py opens
it privately, so it is found among the loaded objects); else Cray MPICH's MPICH_GPU_SUPPORT_ENABLED.
Anything else counts as not CUDA-aware: device buffers are then staged through host memory. The
rule is written once, in the PMPI staging library (native/pmpi_staging/cuda_aware.cpp), which
applies it to mpi4py's own calls too.
"""
import functools

from mpi4py import MPI

from . import pmpi_staging, settings


@functools.lru_cache(maxsize=1)
def cuda_aware():
    """(bool, how it was decided) for the MPI library in this process: the PMPI staging library's
    rule (hpcolls/pmpi_staging.py), so that its entry points and the routes decide alike."""
    return pmpi_staging.cuda_aware_rule(settings.get("HPCOLLS_MPI_CUDA_AWARE"))


def library_version():
    return MPI.Get_library_version().strip().splitlines()[0]
