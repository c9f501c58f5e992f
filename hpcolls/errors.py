"""Exceptions raised by hpcolls. The native ones are defined by the extension module when it is
built; without it, same-named Python classes stand in so `except hpcolls.CollectiveTimeout`
works everywhere."""
from . import native_module


class HpcollsError(RuntimeError):
    """Base of hpcolls' own run-time errors."""


class InvalidBufferError(ValueError):
    """A buffer argument is unusable: size/dtype mismatch, not contiguous, wrong device..."""


class GraphCaptureError(HpcollsError):
    """A call was made on a stream being captured into a CUDA graph, but what it would do there
    (set up a communicator, go through MPI) cannot be captured. Nothing was enqueued: the
    capture is still valid."""


class ValidationError(HpcollsError):
    """HPCOLLS_VALIDATE=1 found ranks disagreeing on count, dtype or op of a collective."""


try:
    _native = native_module.load()
except native_module.NativeModuleMissing:  # native module not built: keep the names importable
    class NoDeviceError(HpcollsError):
        """No CUDA device visible (or no driver)."""

    class CudaError(HpcollsError):
        """A CUDA runtime call failed."""

    class CollectiveTimeout(HpcollsError):
        """A kernel gave up waiting for a peer; the communicator is broken."""

    class CommunicatorBroken(HpcollsError):
        """The communicator timed out earlier or was freed."""
else:
    CollectiveTimeout, CommunicatorBroken = _native.CollectiveTimeout, _native.CommunicatorBroken
    CudaError, NoDeviceError = _native.CudaError, _native.NoDeviceError
