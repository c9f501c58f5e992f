"""hpcolls' PMPI staging library (native/pmpi_staging): where it is, whether it is active here, and
the CUDA-awareness rule it holds, by which the routes too decide whether to stage.

mpi4py's own classes other than the communicators hand buffers to MPI without a communicator
method seeing the call: `MPI.Message.Recv`/`Irecv` (`MPI_Mrecv`/`MPI_Imrecv`),
`MPI.Datatype.Pack`/`Unpack`/`Pack_external`/`Unpack_external` and `MPI.Op.Reduce_local`. On an
MPI that is not CUDA-aware a device buffer there crashes the process, and mpi4py's types cannot
be patched from Python. The library defines those MPI functions and stages device buffers through
host memory; it takes effect only when preloaded (`LD_PRELOAD=$(python -m hpcolls preload)`),
since mpi4py binds its MPI functions when it is imported. The launch scripts preload it.
"""
import ctypes
import functools
import os

from .. import log, native_module, settings

LIBRARY = "libhpcolls_pmpi_staging.so"
MARKER = "hpcolls_pmpi_staging_active"
HOW_TO_PRELOAD = "LD_PRELOAD=$(python -m hpcolls preload)"


def path():
    """The library's file: beside the compiled module hpcolls._native (where the build installs
    both), else in the package directory (hpcolls/); None when it was not built."""
    places = [native_module.directory(), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    for place in filter(None, places):
        candidate = os.path.join(place, LIBRARY)
        if os.path.isfile(candidate):
            return candidate
    return None


@functools.lru_cache(maxsize=1)
def active():
    """True when the library is preloaded into this process (its marker is in the global scope,
    where mpi4py's MPI functions are bound)."""
    return hasattr(ctypes.CDLL(None), MARKER)


@functools.lru_cache(maxsize=1)
def _library():
    found = path()
    if found is None:
        return None
    # Opened privately when not preloaded (the same object when it is): only its functions are used.
    lib = ctypes.CDLL(found)
    lib.hpcolls_mpi_cuda_aware.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
    lib.hpcolls_mpi_cuda_aware.restype = ctypes.c_int
    if hasattr(lib, "hpcolls_mpi_has"):  # (a build older than mpi_has has none)
        lib.hpcolls_mpi_has.argtypes = (ctypes.c_char_p,)
        lib.hpcolls_mpi_has.restype = ctypes.c_int
    return lib


_has = {}  # MPI function name -> whether the loaded MPI library defines it


def mpi_has(function):
    """Whether the MPI library this process loaded defines `function` ("MPI_Bcast_init"): mpi4py
    raises NotImplementedError for a call whose function its library lacks (Open MPI 4.1 reports
    MPI 3.1 and has none of MPI-4's persistent collectives, partitioned calls or MPI_Isendrecv;
    Open MPI 5.0 reports 3.1 too but has them, so the version cannot tell). None when it cannot be
    told: the library is not built (or predates this question), or no MPI library is loaded yet."""
    if function not in _has:
        lib = _library()
        answer = lib.hpcolls_mpi_has(function.encode()) if hasattr(lib, "hpcolls_mpi_has") else -1
        if answer < 0:
            return None
        _has[function] = bool(answer)
    return _has[function]


def cuda_aware_rule(override):
    """(bool, how it was decided) by the library's rule (native/pmpi_staging/cuda_aware.cpp), the
    one the staging entry points follow too; override: HPCOLLS_MPI_CUDA_AWARE parsed (None, False,
    True). Without the library: not CUDA-aware, which stages device buffers (always safe)."""
    lib = _library()
    if lib is None:
        if override is not None:
            return override, f"HPCOLLS_MPI_CUDA_AWARE={int(override)}"
        return False, f"{LIBRARY} is not built (rebuild hpcolls), so device buffers are staged"
    how = ctypes.create_string_buffer(256)
    aware = lib.hpcolls_mpi_cuda_aware(-1 if override is None else int(override), how, len(how))
    return bool(aware), how.value.decode()


@functools.lru_cache(maxsize=1)
def cuda_aware():
    """(bool, how it was decided) for the MPI library in this process: whether device buffers can
    go to MPI as they are. Detected, never assumed, by the library's rule (cuda_aware_rule), so that
    its entry points and the routes decide alike.

    Order: HPCOLLS_MPI_CUDA_AWARE=0/1 overrides; else Open MPI's and MPICH's run-time query
    MPIX_Query_cuda_support() looked up in the MPI library this process already loaded (mpi4py
    opens it privately, so it is found among the loaded objects); else Cray MPICH's
    MPICH_GPU_SUPPORT_ENABLED. Anything else counts as not CUDA-aware: device buffers are then
    staged through host memory."""
    return cuda_aware_rule(settings.get("HPCOLLS_MPI_CUDA_AWARE"))


def status_line():
    """`python -m hpcolls info`'s line about the library in this process."""
    found = path()
    if found is None:
        return f"not built ({LIBRARY} is missing: rebuild hpcolls)"
    if active():
        return f"active (preloaded: {found})"
    return f"not preloaded: mpi4py's Message.Recv/Irecv, Datatype.Pack* and Op.Reduce_local pass device " \
           f"buffers to MPI unchanged; run with {HOW_TO_PRELOAD}"


_warned = False


def warn_if_needed():
    """At a process's first device-buffer call, once: where MPI is not CUDA-aware and the library is
    not preloaded, say what will not be staged and how to fix it."""
    global _warned
    if _warned:
        return
    _warned = True
    if cuda_aware()[0] or active():
        return
    log.warn_once("pmpi_staging", "MPI is not CUDA-aware and hpcolls' PMPI staging library is not preloaded: "
                  "mpi4py's own MPI.Message.Recv/Irecv (MPI.Message.Probe's messages), MPI.Datatype.Pack/Unpack/"
                  "Pack_external/Unpack_external and MPI.Op.Reduce_local will hand device buffers to MPI, which "
                  f"crashes; run with {HOW_TO_PRELOAD} (the launch scripts in jobs/ do)")
