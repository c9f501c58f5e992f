"""CUDA-graph capture: what a call on a capturing stream must refuse.

A captured call is replayed by the GPU alone, so work on the host cannot be in it: a
communicator's set-up (collective MPI calls, allocations, device synchronization) and every call
through MPI. Such calls check their stream first and raise before enqueuing anything, so the
caller's capture stays valid and can still be ended and used.

A set-up is collective, so its refusal is too: every rank raises when any rank's stream
captures. Refusing on the capturing ranks alone would leave the others waiting in the set-up's
MPI calls for ranks that will not come. A call through MPI refuses on its own rank only: agreeing
would cost every such call one more collective (README: capture on every rank or on none).
"""
from . import native_module
from .errors import GraphCaptureError


def refuse_capture(stream, what, advice, comm=None):
    """GraphCaptureError when `stream` is being captured into a CUDA graph, saying `what` cannot
    be captured and what to do (`advice`). With `comm`, a collective over it (every rank makes
    this call at the same point), raising on every rank when any rank's stream captures."""
    check_capture(bool(native_module.load().stream_is_capturing(stream)), what, advice, comm)


def check_capture(capturing, what, advice, comm=None):
    """refuse_capture's decision, given whether this rank's stream captures."""
    if comm is None:
        if capturing:
            raise GraphCaptureError(f"hpcolls: this call's stream is being captured into a CUDA graph, but "
                                    f"{what} cannot be captured; {advice}")
        return
    ranks = [r for r, c in enumerate(comm.allgather(bool(capturing))) if c]
    if ranks:
        whose = f"this call's stream (capturing: rank(s) {ranks}) is" if capturing else \
            f"the streams of rank(s) {ranks} are"
        raise GraphCaptureError(f"hpcolls: {whose} being captured into a CUDA graph, but {what} "
                                f"cannot be captured, so every rank refuses it; {advice}")
