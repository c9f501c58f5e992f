"""solvers — a distributed generalized symmetric-definite eigensolver (LAPACK/ScaLAPACK sygvd).

``solvers.eigh`` is the whole-array entry point with scipy.linalg.eigh's semantics (subsets
included); ``solvers.cholesky`` factors B once for many ``eigh(a, f)``;
``solvers.sygvd.sygvd`` is the distributed routine on DistMatrix inputs; the command line is
``python -m solvers.sygvd``. Runs on numpy + MPI everywhere and on cupy + hpcolls on GPUs.
"""
from .errors import InputError, NotPositiveDefiniteError
from .cholesky import CholeskyFactor, cholesky
from .eigh import eigh

__all__ = ["CholeskyFactor", "InputError", "NotPositiveDefiniteError", "cholesky", "eigh"]
