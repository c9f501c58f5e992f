"""tests/mpi/test_hpcolls_validation_mpi.py at 3 ranks (tests/run.sh runs tests/mpi at 1, 2 and 4): an
odd rank count, where a rank that disagrees is neither half. Bounded by a time-out, so a
validation that let a mismatched call through to MPI (where it hangs) fails here."""
import os
import subprocess
import sys
from pathlib import Path
from mpi_tools import mpi_tool

REPO = Path(__file__).resolve().parents[2]


def test_validation_raises_on_every_rank_at_three_ranks():
    mpiexec = mpi_tool("mpiexec")
    command = [mpiexec, "--allow-run-as-root", "--oversubscribe", "-n", "3", sys.executable, "-m", "pytest",
               "-q", "-p", "no:cacheprovider", str(REPO / "tests/mpi/test_hpcolls_validation_mpi.py")]
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout
