"""Host buffers: the call goes to mpi4py exactly as it was made, with no CUDA call."""
from .. import log


def call(method, base, target, args, kwargs):
    if log.level >= 2:
        log.info_once((method.name, "host"), f"{method.name} on host buffers: handed to mpi4py unchanged")
    return base(target, *args, **kwargs)
