"""The one loader of hpcolls' compiled modules, and the one way to say that one is missing.

hpcolls._native holds the kernels, NativeComm, the native entries, the C entry and the CUDA
runtime calls; hpcolls._native_diag, built only with HPCOLLS_DIAGNOSTICS=1, the diagnostic LL
variants, the launch probes and peek/poke; hpcolls._host_entry, no CUDA at all, the buffer
methods' entry for host buffers (hpcolls/routes/host.py). Every module reaches them through
`load()`, `load_diagnostics()` and `load_host_entry()`, which return the module or raise
`NativeModuleMissing` (an ImportError) saying how to build it; code that can run without the module catches that error. The modules are
looked up in sys.modules at each call, as an import statement does, so a module put there (a
test's stand-in) is the one used.

Also what the native module says about this process: whether it is there, and how many GPUs it
sees (hpcolls.native_available, device_count, gpu_available).
"""
import importlib
import importlib.util
import os
import sys

NATIVE = "hpcolls._native"
DIAGNOSTICS = "hpcolls._native_diag"
HOST_ENTRY = "hpcolls._host_entry"


class NativeModuleMissing(ImportError):
    """A compiled module of hpcolls is not built (or does not load) here."""


def load():
    """hpcolls._native; NativeModuleMissing when it is not built."""
    return _load(NATIVE, "native module not built ({}); reinstall hpcolls with nvcc available")


def load_diagnostics():
    """hpcolls._native_diag; NativeModuleMissing when the diagnostic build was not made."""
    return _load(DIAGNOSTICS, "hpcolls._native_diag is not built ({}): rebuild with HPCOLLS_DIAGNOSTICS=1 in the "
                 "environment, e.g. HPCOLLS_DIAGNOSTICS=1 pip install --no-build-isolation -e .")


def load_host_entry():
    """hpcolls._host_entry; NativeModuleMissing when it is not built."""
    return _load(HOST_ENTRY, "hpcolls._host_entry is not built ({}); reinstall hpcolls (pip install -e .)")


def _load(name, why):
    """The module `name`, or NativeModuleMissing saying `why` (formatted with the import's error)."""
    module = sys.modules.get(name)  # once loaded, as at almost every call: no import machinery
    if module is not None:
        return module
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise NativeModuleMissing(why.format(exc), name=name) from exc


def directory():
    """The directory hpcolls._native is installed in (the build installs the PMPI staging library
    beside it), found without loading it; None when it is not built."""
    try:
        spec = importlib.util.find_spec(NATIVE)
    except (ImportError, ValueError):
        return None
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else None


def native_available():
    """True when the compiled extension hpcolls._native is importable."""
    try:
        load()
        return True
    except NativeModuleMissing:
        return False


def device_count():
    """CUDA devices visible to this process; 0 without a driver, a device or the native module."""
    try:
        native = load()
    except NativeModuleMissing:
        return 0
    return native.device_count()


def gpu_available():
    """True when at least one CUDA device is visible. Never raises, never loads cupy."""
    return device_count() > 0
