"""The MPI tools (mpiexec, mpicc, mpicxx) of the MPI this Python's mpi4py runs on.

The venv's own wrappers (beside sys.executable: PyPI's Open MPI) come first; PATH is only asked
when the venv has none, as a venv built on the machine's MPI (setup.sh, HPCOLLS_MPI_SOURCE=auto)
has not: setup.sh makes no links, and that MPI's tools are the ones on PATH. A machine may also
carry another MPI on PATH (Debian's, for the Fortran test): its mpiexec cannot start a PyPI-MPI
venv's ranks, nor its mpicxx compile against that venv's mpi.h.
"""
import shutil
import sys
from pathlib import Path


def mpi_tool(*names):
    """The first of `names` found beside sys.executable, else on PATH; None when neither has one."""
    for name in names:
        beside = Path(sys.executable).parent / name
        if beside.exists():
            return str(beside)
    for name in names:
        if found := shutil.which(name):
            return found
    return None
