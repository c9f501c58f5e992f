"""The MPI tools (mpiexec, mpicc, mpicxx) of the MPI this Python's mpi4py runs on.

The venv's own wrappers (beside sys.executable: PyPI's Open MPI, or the links setup.sh makes to
the MPI it built mpi4py against) come first; PATH is only asked when the venv has none. A machine
may also carry another MPI on PATH (Debian's, for the Fortran test): its mpiexec cannot start
this venv's ranks, nor its mpicxx compile against this venv's mpi.h.
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
