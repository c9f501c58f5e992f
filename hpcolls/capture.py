"""CUDA-graph capture: what a call on a capturing stream must refuse.

A captured call is replayed by the GPU alone, so work on the host cannot be in it: a
communicator's set-up (collective MPI calls, allocations, device synchronization) and every call
through MPI. Such calls check their stream first and raise before enqueuing anything, so the
caller's capture stays valid and can still be ended and used.
"""
from .errors import GraphCaptureError


def refuse_capture(stream, what, advice):
    """GraphCaptureError when `stream` is being captured into a CUDA graph, saying `what` cannot
    be captured and what to do (`advice`)."""
    from . import _native
    if _native.stream_is_capturing(stream):
        raise GraphCaptureError(f"hpcolls: this call's stream is being captured into a CUDA graph, but {what} "
                                f"cannot be captured; {advice}")
