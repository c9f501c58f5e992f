"""hpcolls' device API on a machine without a GPU (docs/DEVICE_API.md): the struct's layout as the
native module reports it against the C header's declaration, the size limits, hpcolls.DeviceComm
reading the bytes, Communicator.device_comm's error without a GPU, and the headers compiled by nvcc
where it is installed: every element type, broadcast and allgather, the example, the misuses the
headers refuse at compile time, and comm.h as plain C. What runs on a GPU is
tests/gpu/test_hpcolls_device_api_gpu.py."""
import ctypes
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import hpcolls
from hpcolls import native_module
from mpi_tools import mpi_tool

REPO = Path(__file__).resolve().parents[2]
INCLUDE = REPO / "native/include"
HEADER = INCLUDE / "hpcolls/device/comm.h"
native = pytest.importorskip("hpcolls._native", reason="the native module is not built")


class DeviceCommC(ctypes.Structure):
    """hpcolls_device_comm_t as native/include/hpcolls/device/comm.h declares it."""
    _fields_ = [("scratch", ctypes.c_void_p * 32), ("counters", ctypes.c_void_p), ("host_error", ctypes.c_void_p),
                ("half_bytes", ctypes.c_uint64), ("timeout_ns", ctypes.c_uint64), ("rank", ctypes.c_int32),
                ("nranks", ctypes.c_int32)]


def test_the_layout_the_module_reports_is_the_headers():
    assert native.DEVICE_COMM_BYTES == ctypes.sizeof(DeviceCommC)
    for name, _ in DeviceCommC._fields_:
        field = getattr(DeviceCommC, name)
        assert native.DEVICE_COMM_LAYOUT[name] == (field.offset, field.size), name
    assert set(native.DEVICE_COMM_LAYOUT) == {name for name, _ in DeviceCommC._fields_}
    assert int(re.search(r"#define HPCOLLS_DEVICE_API_VERSION (\d+)", HEADER.read_text()).group(1)) == \
        native.DEVICE_API_VERSION
    assert native.MAX_RANKS == 32


@pytest.mark.parametrize("half_bytes, nranks", [(1 << 20, 1), (1 << 20, 4), (3 << 20, 7), (4096, 32), (512, 2)])
def test_size_limits_fit_a_half(half_bytes, nranks):
    limits = native.device_max_bytes(half_bytes, nranks)
    assert limits["allreduce"] == limits["allgather"] == half_bytes // (32 * nranks) * 16
    # a slot per rank of the message's 16-byte chunks, two 16-byte lines each: it fits, one chunk more does not
    assert nranks * limits["allreduce"] * 2 <= half_bytes < nranks * (limits["allreduce"] + 16) * 2
    assert limits["broadcast"] == max(0, half_bytes // 16 - 32) // 2 * 16
    assert native.device_max_bytes(half_bytes, 0)["allreduce"] == 0


def fake_struct(rank=2, nranks=4):
    c = DeviceCommC()
    for r in range(32):
        c.scratch[r] = 0x7F0000000000 + r * 0x1000 if r < nranks else 0
    c.counters, c.host_error, c.half_bytes, c.timeout_ns = 0xAB00, 0xCD00, 1 << 20, 10**10
    c.rank, c.nranks = rank, nranks
    return bytes(c)


def test_device_comm_reads_the_bytes():
    d = hpcolls.DeviceComm(fake_struct())
    assert (d.rank, d.size, d.half_bytes, d.timeout_ns) == (2, 4, 1 << 20, 10**10)
    assert d.scratch == tuple(0x7F0000000000 + r * 0x1000 for r in range(4))
    assert (d.counters, d.error_record) == (0xAB00, 0xCD00)
    assert d.max_bytes == dict(native.device_max_bytes(1 << 20, 4))
    scalar = d.numpy()
    assert scalar["rank"] == 2 and scalar["nranks"] == 4 and scalar["half_bytes"] == 1 << 20
    assert np.frombuffer(scalar.tobytes(), np.uint8).tobytes() == d.raw  # by value: the same bytes
    with pytest.raises(ValueError, match="bytes"):
        hpcolls.DeviceComm(fake_struct()[:-4])


def test_device_comm_without_a_gpu_says_why():
    if native_module.gpu_available():
        pytest.skip("a GPU is visible: tests/gpu/test_hpcolls_device_api_gpu.py")
    from mpi4py import MPI
    comm = hpcolls.Communicator(MPI.COMM_SELF)
    with pytest.raises((hpcolls.NoDeviceError, hpcolls.DeviceApiUnavailable), match="no CUDA device|native path"):
        comm.device_comm(0)


# -- the headers through nvcc ----------------------------------------------------------------------
NVCC = shutil.which("nvcc")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
C_TYPES = ("__half", "__nv_bfloat16", "float", "double", "float2", "double2", "int32_t", "long long",
           "unsigned int", "uint64_t", "signed char", "unsigned char", "short", "uint16_t", "bool",
           "hpcolls::cfloat", "hpcolls::cdouble", "char", "long")
OP_OF = {"float2": "Prod", "double2": "Sum", "hpcolls::cfloat": "Sum", "hpcolls::cdouble": "Prod", "bool": "LXor",
         "__half": "Max", "__nv_bfloat16": "Min", "float": "Sum", "double": "Prod"}


def nvcc(source, tmp_path, *extra):
    path = tmp_path / "unit.cu"
    path.write_text(source)
    return subprocess.run([NVCC, "-std=c++17", "-arch=sm_90", f"-I{INCLUDE}", "-c", str(path), "-o",
                           str(tmp_path / "unit.o"), *extra], capture_output=True, text=True, timeout=600)


@needs_nvcc
def test_every_element_type_broadcast_and_allgather_compile(tmp_path):
    """Both scopes of allreduce, every element type, with every warning an error."""
    kernels = "\n".join(
        f"__global__ void k{i}(hpcolls_device_comm_t c, const {t}* s, {t}* r, size_t n, int* st) {{"
        f" st[0] = int(dev::allreduce<hpcolls::Op::{OP_OF.get(t, 'BXor')}>(c, s, r, n));"
        f" st[1] = int(dev::allreduce_grid<hpcolls::Op::{OP_OF.get(t, 'BXor')}>(c, s, r, n)); }}"
        for i, t in enumerate(C_TYPES))
    source = ("#include <hpcolls/device/collectives.cuh>\nnamespace dev = hpcolls::device;\n" + kernels +
              "\nstruct Pair { int a; float b; };\n"
              "__global__ void rooted(hpcolls_device_comm_t c, Pair* p, Pair* all, int* st) {"
              " st[0] = int(dev::broadcast(c, p, 3, 1)); st[1] = int(dev::allgather(c, p, all, 3)); }\n")
    done = nvcc(source, tmp_path, "-Werror", "all-warnings")
    assert done.returncode == 0, done.stderr[-3000:]


@needs_nvcc
@pytest.mark.parametrize("call, message", [
    ("dev::allreduce<hpcolls::Op::Min>(c, (const float2*)p, (float2*)p, 1)", "MPI does not define this op"),
    ("dev::allreduce<hpcolls::Op::BAnd>(c, (const double*)p, (double*)p, 1)", "MPI does not define this op"),
    ("dev::allreduce<hpcolls::Op::Sum>(c, (const bool*)p, (bool*)p, 1)", "MPI does not define this op"),
    ("dev::allreduce<hpcolls::Op::Sum>(c, (const Pair*)p, (Pair*)p, 1)", "not an element type"),
    ("dev::allreduce_grid<hpcolls::Op::Max>(c, (const double2*)p, (double2*)p, 1)", "MPI does not define this op"),
    ("dev::allreduce_grid<hpcolls::Op::Sum>(c, (const Pair*)p, (Pair*)p, 1)", "not an element type"),
])
def test_misuse_is_refused_at_compile_time(tmp_path, call, message):
    source = ("#include <hpcolls/device/collectives.cuh>\nnamespace dev = hpcolls::device;\n"
              "struct Pair { int a; float b; };\n"
              f"__global__ void k(hpcolls_device_comm_t c, void* p) {{ (void){call}; }}\n")
    done = nvcc(source, tmp_path)
    assert done.returncode != 0 and message in done.stderr, done.stderr[-3000:]


@needs_nvcc
def test_the_example_compiles(tmp_path):
    mpicxx = mpi_tool("mpicxx", "mpic++")
    if mpicxx is None:
        pytest.skip("no MPI C++ compiler wrapper in this venv or on PATH (mpi.h)")
    path = REPO / "docs/examples/device_api_normalize.cu"
    done = subprocess.run([NVCC, "-ccbin", mpicxx, "-std=c++17", "-arch=sm_90", f"-I{INCLUDE}", "-c", str(path),
                           "-o", str(tmp_path / "example.o")], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_comm_h_is_plain_c(tmp_path):
    path = tmp_path / "unit.c"
    path.write_text('#include "hpcolls/device/comm.h"\n'
                    "uint64_t f(const hpcolls_device_comm_t* c) { return hpcolls_device_allreduce_max_bytes(c) +"
                    " hpcolls_device_broadcast_max_bytes(c) + hpcolls_device_allgather_max_bytes(c) + HPCOLLS_DEVICE_OK; }\n")
    done = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", f"-I{INCLUDE}", "-c",
                           str(path), "-o", str(tmp_path / "unit.o")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@needs_nvcc
def test_the_benchmarks_kernels_compile(tmp_path):
    """python -m hpcolls.tools.bench.device_api compiles its kernels on the GPU machine (cupy's
    nvcc backend): the same source must build here, against the same headers."""
    from hpcolls.tools.bench.device_api import INCLUDE as BENCH_INCLUDE, SOURCE
    assert BENCH_INCLUDE == INCLUDE
    done = nvcc(SOURCE, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
