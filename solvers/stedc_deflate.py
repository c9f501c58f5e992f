"""Deflation of one merge of divide and conquer (stedc_merge.py), as LAPACK's dlaed2: the
components with negligible ρ zⱼ drop out, and pairs of nearly equal poles are rotated into one
(a Givens rotation each), so that the secular equation is solved for the rest only."""
import math

import numpy as np

from .backend.arrays import to_host


def deflate(xp, poles, z, rho):
    """Indices of the non-deflated components and the rotations that deflate near-equal poles
    (dlaed2). Modifies ``poles`` and ``z`` in place as those rotations do."""
    eps = np.finfo(np.float64).eps
    d_host, z_host = to_host(poles), to_host(z)   # one copy each: the decisions are made here
    tol = 8.0 * eps * max(float(np.abs(d_host).max()), float(np.abs(z_host).max()))
    alive = np.flatnonzero(rho * np.abs(z_host) > tol)
    if alive.size < 2:
        return alive, []
    d_h, z_h = d_host[alive], z_host[alive]
    # The rotation test of each consecutive pair; without any candidate nothing rotates
    # (the usual case), so the sequential pass below runs only when some pair is close.
    r = np.hypot(z_h[1:], z_h[:-1])
    close = np.abs((d_h[1:] - d_h[:-1]) * (z_h[1:] / r) * (z_h[:-1] / r)) <= tol
    if not close.any():
        return alive, []
    d_all, z_all = d_host.tolist(), z_host.tolist()
    keep, rotations = [], []
    prev = int(alive[0])
    for j in alive[1:].tolist():
        s, c = z_all[prev], z_all[j]
        tau = math.hypot(c, s)
        c, s = c / tau, -s / tau
        if abs((d_all[j] - d_all[prev]) * c * s) <= tol:
            z_all[j], z_all[prev] = tau, 0.0
            rotations.append((prev, j, c, s))
            d_prev = d_all[prev] * c * c + d_all[j] * s * s
            d_all[j] = d_all[prev] * s * s + d_all[j] * c * c
            d_all[prev] = d_prev
        else:
            keep.append(prev)
        prev = j
    keep.append(prev)
    poles[...] = xp.asarray(np.array(d_all))
    z[...] = xp.asarray(np.array(z_all))
    return np.array(keep, dtype=np.int64), rotations
