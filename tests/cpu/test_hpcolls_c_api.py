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


FIELDS_V2 = ("allgather", "bcast", "reduce", "reduce_scatter")
_status = ctypes.c_int
_ptr, _size, _int = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int


class CApiV2(ctypes.Structure):
    """Version 2 appends the other native collectives after version 1's fields."""
    _fields_ = CApiV1._fields_ + [
        ("allgather", ctypes.CFUNCTYPE(_status, _ptr, _ptr, _ptr, _size, _ptr)),
        ("bcast", ctypes.CFUNCTYPE(_status, _ptr, _ptr, _size, _int, _ptr)),
        ("reduce", ctypes.CFUNCTYPE(_status, _ptr, _ptr, _ptr, _size, _int, _int, _int, _ptr)),
        ("reduce_scatter", ctypes.CFUNCTYPE(_status, _ptr, _ptr, _ptr, ctypes.POINTER(_size), _int, _int, _ptr))]


def _table_v2():
    table = _table()
    assert table.version >= 2 and table.struct_size >= ctypes.sizeof(CApiV2)
    return CApiV2.from_address(ctypes.addressof(table))


def test_version_2_appends_the_other_collectives_after_version_1():
    table = _table_v2()
    assert ctypes.sizeof(CApiV2) == ctypes.sizeof(CApiV1) + 4 * ctypes.sizeof(ctypes.c_void_p)
    assert CApiV2.allgather.offset == ctypes.sizeof(CApiV1)  # version 1's fields keep their offsets
    assert all(ctypes.cast(getattr(table, f), ctypes.c_void_p).value for f in FIELDS_V1 + FIELDS_V2)


def test_version_2_calls_without_a_communicator_fail_with_a_message():
    table = _table_v2()
    error = _header_enum("hpcolls_status")["HPCOLLS_ERROR"]
    counts = (ctypes.c_size_t * 2)(1, 1)
    calls = {"allgather": lambda: table.allgather(None, None, None, 8, None),
             "bcast": lambda: table.bcast(None, None, 8, 0, None),
             "reduce": lambda: table.reduce(None, None, None, 1, dtypes.F64, dtypes.SUM, 0, None),
             "reduce_scatter": lambda: table.reduce_scatter(None, None, None, counts, dtypes.F64, dtypes.SUM, None)}
    for name, call in calls.items():
        assert call() == error, name
        assert f"hpcolls: {name} through the C entry: no communicator".encode() == table.last_error()


@pytest.mark.parametrize("dtype, op", [(99, 0), (3, 99), (-1, 0)])
def test_version_2_reductions_refuse_unknown_codes(dtype, op):
    table = _table_v2()
    fake = ctypes.c_void_p(1)  # never dereferenced: the codes are checked first
    error = _header_enum("hpcolls_status")["HPCOLLS_ERROR"]
    assert table.reduce(fake, None, None, 1, dtype, op, 0, None) == error
    assert b"reduce through the C entry: dtype" in table.last_error()
    assert table.reduce_scatter(fake, None, None, None, dtype, op, None) == error
    assert b"not one of hpcolls_dtype / hpcolls_op" in table.last_error()


class CApiV3(ctypes.Structure):
    """Version 3 appends the device API's device_comm (hpcolls/device/comm.h)."""
    _fields_ = CApiV2._fields_ + [("device_comm", ctypes.CFUNCTYPE(_status, _ptr, _ptr))]


def test_version_3_appends_device_comm_after_version_2():
    table = _table()
    assert table.version >= 3 and table.struct_size >= ctypes.sizeof(CApiV3)
    v3 = CApiV3.from_address(ctypes.addressof(table))
    assert CApiV3.device_comm.offset == ctypes.sizeof(CApiV2)
    error = _header_enum("hpcolls_status")["HPCOLLS_ERROR"]
    assert v3.device_comm(None, None) == error
    assert v3.last_error() == b"hpcolls: device_comm through the C entry: no communicator"
    assert v3.device_comm(ctypes.c_void_p(1), None) == error  # the struct is checked before the communicator is used
    assert v3.last_error() == b"hpcolls: device_comm through the C entry: no struct to fill"
