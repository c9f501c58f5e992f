"""stebz: selected eigenvalues of the symmetric tridiagonal T by bisection (LAPACK dstebz).

The wanted indices il..iu are shared out in equal contiguous parts, each rank bisecting its own
part with LAPACK's dstebz (range 'I'); the parts are then summed into one zero-padded array
(each entry has exactly one contributor, so the sum is exact): every rank ends with the same
bits, which the eigenvector stage (stemr.py) relies on to cut the wanted set the same way
everywhere. Work and memory per rank: O(n k / P) and O(n + k).
"""
import numpy as np
import scipy.linalg

from .backend.arrays import to_host

_RANGE_I = 2   # scipy's code for LAPACK's RANGE = 'I'


def replicated_tridiagonal(d, e, coll):
    """(d, e) as float64 host arrays, rank 0's on every rank (broadcast), so that every rank
    solves the same input."""
    coll.bcast(d, root=0, scope="all")
    coll.bcast(e, root=0, scope="all")
    return (np.ascontiguousarray(to_host(d), dtype=np.float64),
            np.ascontiguousarray(to_host(e), dtype=np.float64))


def share(count, parts, index):
    """[start, stop) of part ``index`` when ``count`` items are cut in ``parts`` contiguous
    parts whose sizes differ by at most one."""
    base, extra = divmod(count, parts)
    start = index * base + min(index, extra)
    return start, start + base + (index < extra)


def stebz(d, e, il, iu, coll, bisect=None):
    """Eigenvalues il..iu (1-based, inclusive; none when iu < il) of the tridiagonal (d, e),
    float64 host arrays the same on every rank; returns them ascending, bitwise the same on
    every rank of coll's grid. ``bisect(d, e, il, iu)`` finds a share (default: LAPACK's dstebz;
    stein.bisector: the kernels' multisection in a GPU run)."""
    k = max(iu - il + 1, 0)
    w = np.zeros(k)
    start, stop = share(k, coll.grid.size, coll.grid.rank)
    if stop > start:
        w[start:stop] = (bisect or lapack_bisect)(d, e, il + start, il + stop - 1)
    # Summed as an array of the run's backend: the path every array collective takes.
    return np.ascontiguousarray(to_host(coll.allreduce(coll.xp.asarray(w), scope="all")))


def lapack_bisect(d, e, il, iu):
    """Eigenvalues il..iu (1-based) of (d, e) by one LAPACK dstebz call, ascending."""
    n = d.shape[0]
    if n == 1:
        return d.copy()
    m, w, _, _, info = scipy.linalg.lapack.dstebz(d, e, _RANGE_I, 0.0, 0.0, il, iu, 0.0, "E")
    if info or m != iu - il + 1:
        raise RuntimeError(f"stebz found {m} of eigenvalues {il}..{iu} (info={info})")
    return w[:m]
