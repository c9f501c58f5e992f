"""hpcolls' C entry (native/include/hpcolls/c_api.h) as another extension sees it, through ctypes:
the capsule's name, the struct's version and size, its numbering, and calls that fail cleanly."""
import ctypes
import re
from pathlib import Path

import pytest

from hpcolls import c_api, dtypes

HEADER = Path(__file__).resolve().parents[2] / "native/include/hpcolls/c_api.h"
FIELDS_V1 = ("allreduce", "rank", "nranks", "device", "last_error")


class CApiV1(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("struct_size", ctypes.c_uint32),
                ("allreduce", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                               ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_void_p)),
                ("rank", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)),
                ("nranks", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)),
                ("device", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)),
                ("last_error", ctypes.CFUNCTYPE(ctypes.c_char_p))]


def _table():
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get(c_api.capsule(), b"hpcolls._native.c_api_v1")   # raises if the name differs
    return CApiV1.from_address(address)


def _header_enum(name):
    body = re.search(r"enum %s \{(.*?)\};" % name, HEADER.read_text(), re.S).group(1)
    return {k: int(v) for k, v in re.findall(r"(HPCOLLS_\w+) = (-?\d+)", body)}


def test_capsule_is_named_and_imported_as_the_header_says():
    cap = c_api.capsule()
    assert re.search(r'capsule object "hpcolls\._native\.c_api_v1"', repr(cap)), repr(cap)
    imp = ctypes.pythonapi.PyCapsule_Import
    imp.restype, imp.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_int]
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    assert imp(b"hpcolls._native.c_api_v1", 0) == get(cap, b"hpcolls._native.c_api_v1")
    text = HEADER.read_text()
    assert '#define HPCOLLS_C_API_CAPSULE "hpcolls._native.c_api_v1"' in text
    assert '#define HPCOLLS_COMM_CAPSULE "hpcolls._native.comm_v1"' in text


def test_struct_version_and_size_cover_version_1():
    from hpcolls import _native
    table = _table()
    assert table.version == _native.C_API_VERSION >= 1
    version = int(re.search(r"#define HPCOLLS_C_API_VERSION (\d+)", HEADER.read_text()).group(1))
    assert table.version == version
    assert table.struct_size >= ctypes.sizeof(CApiV1) == 8 + 5 * ctypes.sizeof(ctypes.c_void_p)
    assert all(ctypes.cast(getattr(table, f), ctypes.c_void_p).value for f in FIELDS_V1)


def test_numbering_matches_hpcolls_dtypes():
    """Every code the header names is hpcolls.dtypes' code of that name (F32, SUM, ...)."""
    for enum in ("hpcolls_dtype", "hpcolls_op"):
        codes = _header_enum(enum)
        assert codes, enum
        for name, code in codes.items():
            assert getattr(dtypes, name[len("HPCOLLS_"):]) == code, name
    assert {"HPCOLLS_F32", "HPCOLLS_F64", "HPCOLLS_C64", "HPCOLLS_C128"} <= set(_header_enum("hpcolls_dtype"))
    assert {"HPCOLLS_SUM", "HPCOLLS_PROD", "HPCOLLS_MIN", "HPCOLLS_MAX"} <= set(_header_enum("hpcolls_op"))


def test_calls_without_a_communicator_fail_with_a_message_not_a_crash():
    table = _table()
    status = _header_enum("hpcolls_status")
    assert table.last_error() == b""
    assert table.allreduce(None, None, None, 4, dtypes.F64, dtypes.SUM, None) == status["HPCOLLS_ERROR"]
    assert b"no communicator" in table.last_error()
    assert table.rank(None) == table.nranks(None) == table.device(None) == -1


@pytest.mark.parametrize("dtype, op", [(99, 0), (3, 99), (-1, 0), (3, -1)])
def test_unknown_codes_are_refused_by_name(dtype, op):
    table = _table()
    # A non-null handle that is never dereferenced: the codes are checked first.
    fake = ctypes.c_void_p(1)
    assert table.allreduce(fake, None, None, 1, dtype, op, None) == _header_enum("hpcolls_status")["HPCOLLS_ERROR"]
    assert b"not one of hpcolls_dtype / hpcolls_op" in table.last_error()
