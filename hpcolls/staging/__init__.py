"""Staging: device buffers through host memory for an MPI that is not CUDA-aware, so that no device
pointer ever reaches it.

- pool.py: the host blocks each communicator stages through (pinned, reused);
- pmpi_library.py: hpcolls' PMPI staging library (native/pmpi_staging), which stages mpi4py's own
  calls that no communicator method sees, and the rule that says whether MPI is CUDA-aware.

The staged route itself is hpcolls/routes/mpi_staged.py.
"""
from .pmpi_library import cuda_aware
from .pool import StagingPool

__all__ = ["cuda_aware", "StagingPool"]
