"""The standard problem scaled into range, as LAPACK's drivers scale it (dsyevd, dsyevx; ScaLAPACK's
pdsyevx): a matrix whose largest entry lies below RMIN or above RMAX is multiplied by σ first and
its eigenvalues divided by σ after, so that no step on the way underflows or overflows.

Why: the reduction's Householder norms square the entries (a column of 10⁻¹⁷⁰ underflows to
zero), and bisection's Sturm counts square the off-diagonal (10¹⁶⁰ overflows to inf); unscaled,
the distributed solve of 10⁻¹⁷⁰ A returned eigenvalues 60 % off and of 10¹⁶⁰ A NaN, where scipy
answers both. RMIN and RMAX are dsyevx's for the matrix's precision (its RMAX, the smaller of
dsyevd's and 1/⁴√safmin, keeps the squares of bisection finite). σ is a power of two, so the
scaling itself is exact: the eigenvalues are those of the unscaled matrix as closely as the solve
computes them, and a value range (vl, vu] scaled by σ selects the same eigenvalues.
"""
import math

import numpy as np


def limits(dtype):
    """(RMIN, RMAX) for the real precision of ``dtype``, dsyevx's: √(safmin / ε) and the smaller
    of its inverse and 1 / ⁴√safmin."""
    info = np.finfo(np.dtype(dtype))   # a complex dtype's finfo is its real part's
    smlnum = float(info.tiny) / float(info.eps)   # eps: dlamch('P'), the precision ε times the base
    return math.sqrt(smlnum), min(math.sqrt(1 / smlnum), 1 / math.sqrt(math.sqrt(float(info.tiny))))


def scale_factor(largest, dtype=np.float64):
    """σ for a matrix of ``dtype`` whose largest |entry| is ``largest``: 1 inside [RMIN, RMAX]
    (and for the zero matrix, and for NaN or Inf, which check_finite=False lets through: left as
    they are), else the power of two that brings it just inside."""
    rmin, rmax = limits(dtype)
    if largest == 0 or not math.isfinite(largest) or rmin <= largest <= rmax:
        return 1.0
    exponent = math.log2((rmin if largest < rmin else rmax) / largest)
    return 2.0 ** (math.ceil(exponent) if largest < rmin else math.floor(exponent))


def scale_into_range(c, coll):
    """Scales the DistMatrix ``c`` (the whole symmetric / Hermitian matrix) in place by the σ of
    its largest |entry| over all ranks; returns σ (the same on every rank)."""
    largest = coll.largest(_largest_magnitude(c.xp, c.local) if c.local.size else 0.0)
    sigma = scale_factor(largest, c.dtype)
    if sigma != 1.0:
        c.local *= sigma
        rmin, rmax = limits(c.dtype)
        coll.note("scaled", f"by 2^{int(math.log2(sigma))}: largest |entry| {largest:.3g} outside "
                            f"[{rmin:.3g}, {rmax:.3g}] (LAPACK's dsyevx rule)")
    return sigma


def _largest_magnitude(xp, local):
    """max |entry| of a non-empty array; of real data without an n × n |·| temporary."""
    if xp.iscomplexobj(local):
        return float(xp.abs(local).max())
    return max(float(local.max()), -float(local.min()))
