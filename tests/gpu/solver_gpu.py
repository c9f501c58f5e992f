"""What the solver's GPU test modules share: cupy (importing this skips the calling module where
cupy or a GPU is missing), the world communicator with this rank bound to its GPU, the four
dtypes with their test ids, and the wide type a check computes in."""
import numpy as np

from gpu_required import cupy_with_a_gpu

cupy = cupy_with_a_gpu()

from mpi4py import MPI  # noqa: E402

from solvers.backend.device import select_device  # noqa: E402

COMM = MPI.COMM_WORLD
select_device(COMM)
DTYPES = [np.float64, np.float32, np.complex128, np.complex64]
DTYPE_IDS = ["f64", "f32", "c128", "c64"]


def wide(dtype):
    """The 64-bit type of dtype's kind (complex128 or float64), for references and residuals."""
    return np.complex128 if np.dtype(dtype).kind == "c" else np.float64
