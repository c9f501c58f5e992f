"""hpcolls' C entry for other extension modules (native/include/hpcolls/c_api.h).

An extension that issues its own collectives from C or C++ (the solver's GPU column loop) gets
the function table with ``PyCapsule_Import("hpcolls._native.c_api_v1", 0)`` (or ``capsule()``
here) and a communicator's handle from ``comm_capsule()``, and includes only c_api.h: no pybind11
class of hpcolls crosses into it. The table is versioned and append-only (c_api.h says how).
"""
from . import native_module


def capsule():
    """The function table's capsule, named ``hpcolls._native.c_api_v1``; ImportError
    (NativeModuleMissing) without the native module."""
    return native_module.load().c_api_v1


def comm_capsule(comm, device):
    """A handle (capsule ``hpcolls._native.comm_v1``) on the native half of hpcolls.Communicator
    ``comm`` on GPU ``device``, or None when its native path is off. Collective the first time
    (it opens the native path, as ``comm``'s first device-buffer collective would). The handle
    keeps that native half alive; once ``comm`` is freed, calls through it report
    HPCOLLS_BROKEN."""
    native = comm.native_comm(device)
    return None if native is None else native.capsule()
