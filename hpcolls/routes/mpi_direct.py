"""Device buffers to a CUDA-aware MPI: the call as it was made, once the caller's stream has done
its earlier work (MPI is not stream-ordered: it reads and writes the buffers when called).

A nonblocking call's request completes as mpi4py's own; a persistent one reads the buffers at each
Start, so work on them must be done (the stream synchronized) before each Start, as with plain
mpi4py.
"""
from .. import native_module
from ..capture import refuse_capture


def call(method, base, target, args, kwargs, stream):
    refuse_capture(stream, f"{method.name} through MPI", "make it outside the capture")
    native_module.load().stream_synchronize(stream)
    return base(target, *args, **kwargs)
