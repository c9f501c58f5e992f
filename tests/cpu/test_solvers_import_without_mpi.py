"""`import solvers`, `python -m solvers.sygvd --help` and `python -m solvers.bench --help`
start no MPI: a process that only looks at the package or asks for help needs no launcher, no
network probe and no MPI_Finalize.

Each runs in a fresh interpreter (pytest's own process has MPI up already: tests/conftest.py).
The proof there is twofold: mpi4py.MPI was never imported (importing it is what initializes MPI
from Python), and MPI_Initialized, asked afterwards through mpi4py with its automatic
initialization turned off, is false (nothing else, such as an extension module, started it)."""
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# Runs ``what`` (Python source), then reports what became of MPI; a --help exits through
# SystemExit, which the check below outlives.
_CHECK = """
import sys
try:
    {what}
except SystemExit:
    pass
imported = "mpi4py.MPI" in sys.modules
import mpi4py
mpi4py.rc.initialize = False
mpi4py.rc.finalize = False
from mpi4py import MPI
print("MPI imported", imported, "initialized", MPI.Is_initialized(), file=sys.stderr)
"""

_RUN_MODULE = "import runpy; sys.argv = [{module!r}, '--help']; runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"


@pytest.mark.parametrize("what", [
    "import solvers",
    "import solvers, solvers.sygvd, solvers.syevd, solvers.plan, solvers.cli, solvers.bench",
    _RUN_MODULE.format(module="solvers.sygvd"),
    _RUN_MODULE.format(module="solvers.bench"),
], ids=["import solvers", "import the entries", "python -m solvers.sygvd --help",
        "python -m solvers.bench --help"])
def test_no_mpi_is_started(what):
    out = subprocess.run([sys.executable, "-c", _CHECK.format(what=what)], capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert "MPI imported False initialized False" in out.stderr, out.stderr


@pytest.mark.parametrize("module", ["solvers.sygvd", "solvers.bench"])
def test_help_runs_as_a_module_without_warnings(module):
    """``python -W error -m solvers.sygvd --help``: the help, and no warning (runpy warns where
    the package's own import already loaded the module it is asked to run)."""
    out = subprocess.run([sys.executable, "-W", "error", "-m", module, "--help"], capture_output=True,
                         text=True, timeout=120, cwd=REPO)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: python -m {module}") and out.stderr == "", out.stderr
