"""Is the MPI library CUDA-aware? Detected, never assumed.

Order: HPCOLLS_MPI_CUDA_AWARE=0/1 overrides; else Open MPI's and MPICH's run-time query
MPIX_Query_cuda_support() looked up in the libmpi this process already loaded (mpi4py opens it
privately, so it is found through /proc/self/maps); else Cray MPICH's MPICH_GPU_SUPPORT_ENABLED.
Anything else counts as not CUDA-aware: device buffers are then staged through host memory.
"""
import ctypes
import functools
import os

from mpi4py import MPI

from . import settings


def _loaded_libmpi():
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(None, 1)[-1]
                if "/libmpi" in path and ".so" in path:
                    return path
    except OSError:
        pass
    return None


@functools.lru_cache(maxsize=1)
def cuda_aware():
    """(bool, how it was decided) for the MPI library in this process."""
    override = settings.get("HPCOLLS_MPI_CUDA_AWARE")
    if override is not None:
        return override, f"HPCOLLS_MPI_CUDA_AWARE={int(override)}"
    lib = _loaded_libmpi()
    if lib:
        try:
            query = ctypes.CDLL(lib).MPIX_Query_cuda_support
            query.restype = ctypes.c_int
            return bool(query()), f"MPIX_Query_cuda_support() in {os.path.basename(lib)}"
        except (OSError, AttributeError):
            pass
    if os.environ.get("MPICH_GPU_SUPPORT_ENABLED") == "1":
        return True, "MPICH_GPU_SUPPORT_ENABLED=1"
    return False, "no CUDA-awareness query answered yes (set HPCOLLS_MPI_CUDA_AWARE=1 to override)"


def library_version():
    return MPI.Get_library_version().strip().splitlines()[0]
