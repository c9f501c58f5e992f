"""Host buffers: the call goes to mpi4py exactly as it was made, with no CUDA call.

Two doors lead here. Each buffer method of hpcolls.Communicator is a C entry (`direct`, made
from native/host_entry/host_entry.cpp) that hands a call straight to mpi4py's method when every
buffer argument is of a kind hpcolls.buffers.HOST_TYPES or NO_MEMORY names (alone or first in a
list/tuple spec), every keyword is one of mpi4py's (no `stream=`), the log is quieter than INFO
and, for a collective, the communicator's settings ask for no validation: the common host call,
which then costs what mpi4py's own call does (docs/PERFORMANCE.md#host-buffer-overhead). Every
other call runs hpcolls' Python method, whose route (hpcolls.routes.call) validates, reads the
buffers, and ends in `call` below when they are host memory all the same (DLPack on the CPU,
__cuda_array_interface__ over host memory, ...).
"""
from .. import buffers, log, native_module

try:  # without the compiled entry every call runs the Python method (correct, slower)
    _HostEntry = native_module.load_host_entry().HostEntry
except native_module.NativeModuleMissing:
    _HostEntry = None


def call(method, base, target, args, kwargs):
    if log.level >= 2:
        log.info_once((method.name, "host"), f"{method.name} on host buffers: handed to mpi4py unchanged")
    return base(target, *args, **kwargs)


def direct(method, full, gate=None, base=None):
    """hpcolls' buffer method for `method` (an hpcolls.methods.Method): its Python method `full`
    behind the C entry that hands host calls to `base` (mpi4py's method by default) as they are
    made. `gate`: the name of an attribute of the communicator that must be True for that (None:
    no gate). `full` itself where the C entry is not built."""
    if _HostEntry is None:
        return full
    entry = _HostEntry(base=base or getattr(method.owner, method.name), full=full, parameters=method.parameters,
                       buffers=tuple(method.parameters.index(name) for name, _ in method.buffers),
                       host_types=buffers.HOST_TYPES, no_buffers=buffers.NO_MEMORY, log_state=vars(log),
                       log_level_full=log.LEVELS["INFO"], gate=gate)
    for name in ("__name__", "__qualname__", "__doc__", "__module__", "__signature__"):
        setattr(entry, name, getattr(full, name))
    return entry
