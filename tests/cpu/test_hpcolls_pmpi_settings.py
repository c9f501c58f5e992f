"""The PMPI library reads the HPCOLLS_* settings a C program's calls depend on itself (it runs
without Python): its defaults must be hpcolls.settings' (native/pmpi_staging/pmpi_settings.h). Its selection table is
the plan's own (native/hpcolls/plan.cpp), linked from the same core library as hpcolls._native."""
import ctypes

import pytest

from hpcolls import config, native_module, settings
from hpcolls.staging import pmpi_library


@pytest.fixture(scope="module")
def library():
    path = pmpi_library.path()
    if path is None:
        pytest.skip("the PMPI library is not built")
    lib = ctypes.CDLL(path)
    lib.hpcolls_pmpi_settings_defaults.restype = ctypes.c_char_p
    return lib


def test_c_defaults_are_the_registry_defaults(library):
    text = library.hpcolls_pmpi_settings_defaults().decode()
    c_defaults = dict(item.split("=", 1) for item in text.split())
    assert set(c_defaults) == {"HPCOLLS_TIMEOUT", "HPCOLLS_SCRATCH_BYTES", "HPCOLLS_DEPENDENT_LAUNCH", "HPCOLLS_ALGO",
                               "HPCOLLS_PMPI_WAIT", "HPCOLLS_PROTOCOL", "HPCOLLS_SENTINEL_SCRATCH_BYTES",
                               "HPCOLLS_LL128_SCRATCH_BYTES", "HPCOLLS_LL128_PROBE_MS", "HPCOLLS_PMPI_RESIDENT_US"}
    for name, value in c_defaults.items():
        default = settings.get(name, {})
        assert settings.get(name, {name: value}) == default, name


def test_the_pmpi_library_plans_with_the_native_modules_table(library):
    """One table: the PMPI library's copy of the plan (hpcolls_core, linked into it) gives the rows
    hpcolls._native gives Python (hpcolls_pmpi_selection_table: a line per row)."""
    try:
        native = native_module.load()
    except native_module.NativeModuleMissing as exc:
        pytest.skip(str(exc))
    library.hpcolls_pmpi_selection_table.restype = ctypes.c_char_p
    c_rows = library.hpcolls_pmpi_selection_table().decode().splitlines()
    keys = ("collective", "max_ranks", "ll_max", "ll128_max", "ll_oneshot_max", "sentinel_oneshot_max",
            "native_max_vs_nccl")
    python_rows = [" ".join(str(-1 if row[k] is None else row[k]) for k in keys) for row in config.selection_table()]
    assert c_rows and c_rows == python_rows


def test_a_host_only_config_never_asks_the_native_module(monkeypatch):
    """The table lives in the native module, read only where the native path opens: a communicator
    of host buffers reads its settings without asking the module for anything."""
    def refuse():
        raise AssertionError("Config.from_env asked the native module")
    monkeypatch.setattr(native_module, "load", refuse)
    for name in ("HPCOLLS_ONESHOT_MAX_BYTES", "HPCOLLS_TWOSHOT_MAX_BYTES"):
        monkeypatch.delenv(name, raising=False)
    cfg = config.Config.from_env(4)
    assert cfg.oneshot_max_bytes is None and cfg.twoshot_max_bytes is None
