"""Which eigenpairs are wanted: LAPACK's RANGE ('A' all, 'I' by index, 'V' by value).

    EigenRange.all()               every eigenpair
    EigenRange.by_index(il, iu)    the il-th to iu-th smallest, 1-based and inclusive
                                   (LAPACK / ScaLAPACK gvx: 1 <= il <= iu <= n)
    EigenRange.by_value(vl, vu)    every eigenvalue in the half-open interval (vl, vu]

``solver`` says how a subset's eigenpairs of the tridiagonal are found (stevr.py):
'mrrr' (bisection + MRRR, work and memory O(n k / P)), 'invit' (multisection + inverse
iteration, on the GPU in a GPU run), 'dc' (divide and conquer of all of them, the k wanted
kept), or 'auto' (by the measured crossover).

A value range becomes an index range through Sturm counts of the tridiagonal (how many
eigenvalues are <= x: the non-positive pivots of T - x I, LAPACK dlaebz's rule), so that every
later step works on indices; the counts are exact arithmetic on the same replicated (d, e) on
every rank, hence the same everywhere.
"""
import math
from dataclasses import dataclass

import numpy as np

from .errors import InputError


@dataclass(frozen=True)
class EigenRange:
    kind: str = "A"
    il: int = 0
    iu: int = 0
    vl: float = -math.inf
    vu: float = math.inf
    solver: str = "auto"

    SOLVERS = ("auto", "mrrr", "invit", "dc")

    @classmethod
    def all(cls):
        return cls()

    @classmethod
    def by_index(cls, il, iu, solver="auto"):
        return cls("I", il=int(il), iu=int(iu), solver=solver)

    @classmethod
    def by_value(cls, vl, vu, solver="auto"):
        return cls("V", vl=float(vl), vu=float(vu), solver=solver)

    def solved_by(self, solver):
        """The same range, its tridiagonal eigenpairs found by ``solver``."""
        return EigenRange(self.kind, self.il, self.iu, self.vl, self.vu, solver)

    def scaled(self, sigma):
        """The same range for the matrix scaled by σ > 0 (scaling.py): a value range's bounds
        times σ."""
        if self.kind != "V" or sigma == 1.0:
            return self
        return EigenRange("V", self.il, self.iu, self.vl * sigma, self.vu * sigma, self.solver)

    @classmethod
    def parse(cls, text):
        """The command line's 'A', 'I:IL:IU' (1-based) or 'V:VL:VU' (VL, VU floats, 'inf' allowed)."""
        parts = text.strip().split(":")
        kind = parts[0].upper()
        try:
            if kind == "A" and len(parts) == 1:
                return cls.all()
            if kind == "I" and len(parts) == 3:
                return cls.by_index(int(parts[1]), int(parts[2]))
            if kind == "V" and len(parts) == 3:
                return cls.by_value(float(parts[1]), float(parts[2]))
        except ValueError:
            pass
        raise ValueError(f"range must be A, I:IL:IU (1-based indices) or V:VL:VU, got {text!r}")

    @property
    def is_all(self):
        return self.kind == "A"

    def check(self, n):
        """InputError unless valid for order n (LAPACK's rules; the same on every rank)."""
        if self.kind == "I" and not (1 <= self.il <= self.iu <= n):
            raise InputError(f"range I:{self.il}:{self.iu} is not valid for n = {n}: need "
                             f"1 <= IL <= IU <= {n} (1-based, inclusive)")
        if self.kind == "V" and not self.vl < self.vu:   # NaN fails it too
            raise InputError(f"range V:{self.vl}:{self.vu} is not valid: need VL < VU "
                             "(eigenvalues in (VL, VU])")
        if self.kind not in ("A", "I", "V"):
            raise InputError(f"range kind must be A, I or V, got {self.kind!r}")
        if self.solver not in self.SOLVERS:
            raise InputError(f"subset solver must be one of {', '.join(self.SOLVERS)}, got {self.solver!r}")

    def indices(self, d, e):
        """(il, iu), 1-based inclusive, of the wanted eigenvalues of the tridiagonal (d, e)
        (host float64 arrays); iu = il - 1 when a value range holds none."""
        n = d.shape[0]
        if self.kind == "A":
            return 1, n
        if self.kind == "I":
            return self.il, self.iu
        below_vl = count_at_most(d, e, self.vl)
        return below_vl + 1, count_at_most(d, e, self.vu)

    def __str__(self):
        if self.kind == "I":
            return f"I:{self.il}:{self.iu}"
        if self.kind == "V":
            return f"V:{self.vl:g}:{self.vu:g}"
        return "A"


def count_at_most(d, e, x):
    """The number of eigenvalues <= x of the symmetric tridiagonal (d, e) by the Sturm sequence
    of T - x I (±inf: 0 or n). Pivots smaller than pivmin in magnitude count as negative, as in
    LAPACK's dlaebz, so that an eigenvalue at x itself is counted."""
    n = d.shape[0]
    if x == math.inf:
        return n
    if x == -math.inf or n == 0:
        return 0
    e2 = np.square(e).tolist()
    pivmin = np.finfo(np.float64).tiny * max(1.0, max(e2, default=1.0))
    count, q = 0, 1.0
    for i, di in enumerate(d.tolist()):
        q = di - x - (e2[i - 1] / q if i else 0.0)
        if abs(q) < pivmin:
            q = -pivmin
        if q <= 0:
            count += 1
    return count


def positions(w, subset):
    """slice of the ascending, already computed eigenvalues w (host) that ``subset`` selects:
    what a whole-problem library call (single.py) keeps of its full result."""
    if subset is None or subset.kind == "A":
        return slice(0, w.shape[0])
    if subset.kind == "I":
        return slice(subset.il - 1, subset.iu)
    lo = int(np.searchsorted(w, subset.vl, side="right"))    # first w > vl
    return slice(lo, max(lo, int(np.searchsorted(w, subset.vu, side="right"))))
