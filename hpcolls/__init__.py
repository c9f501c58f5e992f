"""hpcolls: latency-first GPU collectives for HPC behind an mpi4py-style communicator.

    from mpi4py import MPI
    import hpcolls
    comm = hpcolls.wrap(MPI.COMM_WORLD)       # the one line that changes
    comm.Allreduce(MPI.IN_PLACE, x_gpu, op=MPI.SUM)
"""
import importlib

from . import log
from .binding import mps_active, select_device
from .errors import (CollectiveTimeout, CommunicatorBroken, CudaError, GraphCaptureError, HpcollsError,
                     InvalidBufferError, NoDeviceError, ValidationError)
from .device_api import DeviceApiUnavailable, DeviceComm
from .native_module import device_count, gpu_available, native_available

__version__ = "0.1.0"

# The names whose modules import mpi4py.MPI, which initializes MPI: handed on at their first use
# (PEP 562), so that `import hpcolls`, `python -m hpcolls --help` and `preload` start no MPI.
_NEEDS_MPI = {"Communicator": ".communicator", "wrap": ".communicator", "nccl_communicator": ".routes.nccl"}


def __getattr__(name):
    if name not in _NEEDS_MPI:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = globals()[name] = getattr(importlib.import_module(_NEEDS_MPI[name], __name__), name)
    return value


def __dir__():
    return sorted({*globals(), *_NEEDS_MPI})


__all__ = ["Communicator", "wrap", "gpu_available", "device_count", "native_available", "log",
           "select_device", "mps_active", "nccl_communicator",
           "CollectiveTimeout", "CommunicatorBroken", "CudaError", "GraphCaptureError", "HpcollsError",
           "InvalidBufferError", "NoDeviceError", "ValidationError", "DeviceComm", "DeviceApiUnavailable",
           "__version__"]
