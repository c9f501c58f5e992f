"""solvers — a distributed generalized symmetric-definite eigensolver (LAPACK/ScaLAPACK sygvd).

``solvers.eigh`` is the whole-array entry point with scipy.linalg.eigh's semantics (subsets
included); ``solvers.cholesky`` factors B once for many ``eigh(a, f)``;
``solvers.sygvd.sygvd`` is the distributed routine on DistMatrix inputs; the command line is
``python -m solvers.sygvd`` (solvers/cli); the benchmarks are ``python -m solvers.bench[.<name>]``
(solvers/bench). Every choice of a solve is made once, at its entry, into one plan the stages
read (solvers/plan.py). Runs on numpy + MPI everywhere and on cupy + hpcolls on GPUs.

Importing the package starts no MPI: importing mpi4py.MPI initializes MPI, so every module here
imports it inside the functions that communicate (a solve, a Collectives, the command line once
its arguments parse), never at its top; ``python -m solvers.sygvd --help`` and ``python -m
solvers.bench --help`` need no launcher (tests/cpu/test_solvers_import_without_mpi.py).
"""
from .errors import InputError, NotPositiveDefiniteError, RankMismatchError
from .cholesky import CholeskyFactor, cholesky
from .eigh import eigh

__all__ = ["CholeskyFactor", "InputError", "NotPositiveDefiniteError", "RankMismatchError",
           "cholesky", "eigh"]
