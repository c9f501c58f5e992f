"""Errors the solver raises identically on every rank.

A distributed routine may only raise after the ranks have agreed that it must (the verdict is
broadcast or reduced first); otherwise the ranks that did not see the problem would wait forever
inside the next collective. Both classes derive from the exceptions scipy raises for the same
condition, so ``solvers.eigh`` can be a drop-in replacement.
"""
import numpy as np


class InputError(ValueError):
    """Bad shapes, non-finite entries, unreadable files, impossible grids."""


class RankMismatchError(InputError):
    """The ranks of one communicator called a solver entry with different problems
    (agreement.py)."""


class NotPositiveDefiniteError(np.linalg.LinAlgError):
    """B is not positive definite. ``info`` is LAPACK's: the order of the first leading minor
    that is not positive definite (1-based)."""

    def __init__(self, info, n):
        self.info = int(info)
        self.n = int(n)
        super().__init__(f"the leading minor of order {self.info} of B is not positive definite, "
                         f"so B has no Cholesky factor (potrf info = {self.info}; sygvd and hegvd "
                         f"report info = n + {self.info} = {self.n + self.info})")
