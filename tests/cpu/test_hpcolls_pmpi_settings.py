"""The PMPI library reads the HPCOLLS_* settings a C program's calls depend on itself (it runs
without Python): its defaults must be hpcolls.settings' (native/pmpi_staging/pmpi_settings.h), and
its selection table the one Python plans with (native/include/hpcolls/selection_table.h)."""
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
                               "HPCOLLS_PMPI_WAIT"}
    for name, value in c_defaults.items():
        default = settings.get(name, {})
        assert settings.get(name, {name: value}) == default, name


def test_python_plans_with_the_c_table():
    try:
        native = native_module.load()
    except native_module.NativeModuleMissing as exc:
        pytest.skip(str(exc))
    assert config.selection_table() == native.SELECTION_TABLE
    for max_ranks, one, two in native.SELECTION_TABLE:
        assert config.thresholds(max_ranks) == (one, two)
