"""solvers._kernels, the solver's own extension module (native/solvers), on a machine without a
GPU: built beside hpcolls._native, numbered as hpcolls numbers types, a clear error for every
GPU call; the solver without it; and the rule that the solver reaches hpcolls only through its
public names and its C entry."""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hpcolls
from hpcolls import c_api, dtypes

ROOT = Path(__file__).resolve().parents[2]
_kernels = pytest.importorskip("solvers._kernels", reason="solvers._kernels not built (nvcc at install)")
no_gpu = pytest.mark.skipif(hpcolls.gpu_available(), reason="a GPU is visible: the no-GPU errors cannot happen")


def test_types_are_numbered_as_hpcolls_numbers_them():
    assert _kernels.DTYPES == {"float32": dtypes.F32, "float64": dtypes.F64,
                               "complex64": dtypes.C64, "complex128": dtypes.C128}
    from hpcolls import _native
    assert _kernels.HPCOLLS_C_API_VERSION_BUILT == _native.C_API_VERSION
    assert _kernels.SYTRD_PRODUCTS == ("gemv", "hemv_lower")


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_workspace_grows_with_the_element(dtype):
    """Work is counted in elements of the matrix type (plus the hemv's scratch on one rank)."""
    code, size = _kernels.DTYPES[dtype], np.dtype(dtype).itemsize
    gemv = _kernels.sytrd_work_bytes(1000, 64, code, 0)
    hemv = _kernels.sytrd_work_bytes(1000, 64, code, 1)
    assert gemv % size == 0 and hemv - gemv == size * _kernels.hemv_lower_work_elems(1000)
    with pytest.raises(ValueError, match="float32, float64, complex64 and complex128"):
        _kernels.sytrd_work_bytes(1000, 64, dtypes.I64, 0)


def _panel_args(**overrides):
    args = dict(dtype=dtypes.F64, device=0, n=4, j0=0, width=4, local=0, ld=4, rows_host=np.arange(4),
                cols_host=np.arange(4), rows_dev=0, cols_dev=0, panel=0, v_mat=0, w_mat=0, d=0, e=0, tau=0,
                work=0, p=0, stream=0, comm=None, nranks=1, fallback=None)
    return {**args, **overrides}


@no_gpu
def test_gpu_calls_say_there_is_no_gpu():
    for call in (lambda: _kernels.sytrd_panel(**_panel_args()),
                 lambda: _kernels.hemv_lower(dtypes.F64, 0, 4, 0, 4, 0, 0, 0, 0),
                 lambda: _kernels.sb2st_device_fits(64, dtypes.F64, 0),
                 lambda: _kernels.sb2st_device(dtypes.F64, 0, 4, 2, 0, 0, 0, 0, 1, 2, 3, 0, 0),
                 lambda: _kernels.sytrd_fused_plan(None, 0, 2, 100, 32, dtypes.F64, 2)):
        with pytest.raises(_kernels.NoDeviceError, match=r"solvers\._kernels\.\w+: no CUDA device visible"):
            call()
    assert issubclass(_kernels.NoDeviceError, RuntimeError)


def test_the_communicator_must_be_an_hpcolls_handle():
    """The function table's capsule is not a communicator's handle: refused by name, nothing run."""
    for call in (lambda comm: _kernels.sytrd_panel(**_panel_args(comm=comm, nranks=2)),
                 lambda comm: _kernels.column_allreduce(comm, 0, 2, 0, 4, dtypes.F64, 0),
                 lambda comm: _kernels.sytrd_fused_plan(comm, 0, 2, 100, 32, dtypes.F64, 2),
                 lambda comm: _kernels.sytrd_fused_check(comm, 0, 2)):
        with pytest.raises(TypeError, match=r"hpcolls\.c_api\.comm_capsule\(\) \(hpcolls\._native\.comm_v1\)"):
            call(c_api.capsule())
    with pytest.raises(TypeError, match="comm is None"):
        _kernels.column_allreduce(None, 0, 2, 0, 4, dtypes.F64, 0)
    with pytest.raises(TypeError, match="comm is None"):
        _kernels.sytrd_fused_check(None, 0, 2)


def test_the_solver_imports_and_solves_without_the_extension():
    """A CPU-only install has no solvers._kernels: the solver imports, solves, and says why the
    GPU column loop is off."""
    code = """
import sys
sys.modules["solvers._kernels"] = None   # as if it had not been built
import numpy as np
import solvers
from solvers.kernels import kernels
module, why = kernels()
assert module is None, module
print(why)
rng = np.random.default_rng()
a = rng.standard_normal((30, 30)); a = a + a.T
b = np.eye(30) * 2
w = solvers.eigh(a, b, eigvals_only=True)
assert np.allclose(w, np.linalg.eigvalsh(a) / 2), w
print("solved")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    assert "solvers._kernels not built" in out.stdout and "solved" in out.stdout, out.stdout


def test_the_solver_reaches_hpcolls_only_through_its_public_names():
    """docs/ARCHITECTURE.md ("solvers"): no solver code in hpcolls._native and no private hpcolls import in solvers;
    the solver's C++ includes hpcolls/c_api.h and the public device API (hpcolls/device/, for the
    fused sytrd loop's in-kernel AllReduce: docs/DEVICE_API.md) and no other header of hpcolls."""
    public = set(hpcolls.__all__) | {"c_api"}
    found = []
    for path in sorted((ROOT / "solvers").rglob("*.py")):
        text = path.read_text()
        for module, names in re.findall(r"from hpcolls(\.\w+)? import ([\w, ]+)", text):
            used = {module[1:]} if module else {n.split()[0] for n in names.split(",")}
            found += [f"{path.name}: {u}" for u in used - public]
        found += [f"{path.name}: hpcolls.{a}" for a in re.findall(r"\bhpcolls\.(\w+)", text)
                  if a not in public and not a[0].isupper() and a != "py"]
    assert not found, found
    includes = {inc for p in (ROOT / "native/solvers").rglob("*") if p.is_file()
                for inc in re.findall(r'#include "(hpcolls/[^"]+)"', p.read_text())}
    assert includes <= {"hpcolls/c_api.h", "hpcolls/device/comm.h", "hpcolls/device/collectives.cuh"}, includes
    native_sources = "".join(p.read_text() for p in (ROOT / "native").rglob("*")
                             if p.is_file() and ROOT / "native/solvers" not in p.parents)
    assert not re.search(r"sytrd|symv|hemv", native_sources), "solver code left in hpcolls' native module"
