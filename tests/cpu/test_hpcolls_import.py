"""`import hpcolls`, `python -m hpcolls --help` (and -h, --version) and `python -m hpcolls preload`
start no MPI: importing mpi4py.MPI initializes MPI, so none of them may import it. Each runs in a
fresh interpreter, which then asks MPI itself whether it was initialized (with mpi4py told not to
initialize it on import, so the question cannot answer itself); the first use of hpcolls.wrap,
which needs MPI, is the check that the question can say yes."""
import json
import os
import subprocess
import sys

import pytest

# Runs `body` (Python source), then reports whether mpi4py.MPI had been imported and whether MPI
# is initialized, as JSON on the last line of stdout.
_PROBE = """
import json, sys
{body}
imported = "mpi4py.MPI" in sys.modules
import mpi4py
mpi4py.rc.initialize = False  # importing MPI now must not initialize it: only what ran above can have
from mpi4py import MPI
print(json.dumps({{"imported": imported, "initialized": MPI.Is_initialized()}}))
"""

_RUN_MAIN = """
import runpy
sys.argv = ["hpcolls", *{args!r}]
try:
    runpy.run_module("hpcolls", run_name="__main__", alter_sys=True)
except SystemExit as exit:
    assert exit.code in (0, None), exit.code
"""


def _mpi_after(body):
    out = subprocess.run([sys.executable, "-c", _PROBE.format(body=body)], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stdout


def test_import_hpcolls_starts_no_mpi():
    state, _ = _mpi_after("import hpcolls\n"
                          "assert hpcolls.__version__ and isinstance(hpcolls.gpu_available(), bool)\n"
                          "assert hpcolls.device_count() >= 0 and isinstance(hpcolls.native_available(), bool)\n"
                          "assert issubclass(hpcolls.CollectiveTimeout, RuntimeError) and hpcolls.log\n"
                          "assert callable(hpcolls.select_device) and callable(hpcolls.mps_active)")
    assert state == {"imported": False, "initialized": False}


@pytest.mark.parametrize("args", [["--help"], ["-h"], [], ["--version"], ["preload"]])
def test_help_version_and_preload_start_no_mpi(args):
    state, stdout = _mpi_after(_RUN_MAIN.format(args=args))
    assert state == {"imported": False, "initialized": False}, args
    expected = {"--version": "hpcolls ", "preload": "libhpcolls_pmpi_staging.so"}.get(args[0] if args else "",
                                                                                       "subcommands:")
    assert expected in stdout, stdout


def test_the_communicator_initializes_mpi_as_mpi4py_does():
    """The control: the probe sees MPI initialized once hpcolls.wrap is used."""
    state, _ = _mpi_after("import hpcolls\nhpcolls.wrap()")
    assert state == {"imported": True, "initialized": True}
