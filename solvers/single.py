"""The 'single' method (plan.py): the whole problem solved on rank 0 by one library call
(whole.py), the result handed to every rank.

Rank 0 solves with the cores of its whole node (threads.node_cores_lent) while the other ranks
wait idle (Collectives.bcast_idle) for the verdict: success, or the error every rank then raises
alike. Eigenvalues go to every rank; eigenvectors are scattered into A's layout (drivers on
DistMatrix inputs) or broadcast whole (solvers.eigh, where every rank holds the whole problem).
At one rank it is the library call alone.
"""
import numpy as np

from .backend.arrays import real_dtype, to_host
from .backend.threads import node_cores_lent
from .distributed.descriptor import Descriptor
from .distributed.distmatrix import DistMatrix
from .errors import InputError, NotPositiveDefiniteError
from .lapack_names import lapack_name
from .whole import whole_eig

_OK, _NOT_POSITIVE_DEFINITE, _FAILED = 0, 1, 2


def single_distributed(a, b, coll, itype, vectors, lower, plan, subset=None):
    """(w, Z DistMatrix in A's block size and grid, or None) of DistMatrix inputs, in one stage
    named as the LAPACK driver (sygvd, hegvd, syevd, heevd); ``plan``: the solve's SolverPlan
    (why this method; the BLAS threads rank 0 borrows). A ``subset`` (subset.EigenRange) is
    the call's to find (whole.py: LAPACK's subset drivers on CPU)."""
    xp, grid, n = a.xp, a.grid, a.shape[0]
    with coll.stage(lapack_name("syevd" if b is None else "sygvd", a.dtype)):
        coll.note("method", f"single [{plan.method_why}]")
        if grid.size == 1:   # the local array is the whole matrix
            w, z, what = whole_eig(xp, a.local, None if b is None else b.local, itype, vectors,
                                   lower, subset)
            coll.note("call", what)
            if not vectors:
                return w, None
            return w, DistMatrix(z, Descriptor.create(n, z.shape[1], a.nb, a.nb, grid), grid)
        a_root = a.gather(coll)
        b_root = b.gather(coll) if b is not None else None
        w, z_root = on_root(coll, n, a.dtype, plan.threads, lambda: _host_results(
            whole_eig(xp, xp.asarray(a_root), None if b is None else xp.asarray(b_root),
                      itype, vectors, lower, subset), coll))
        z = None
        if vectors:
            z = DistMatrix.scatter(z_root, (n, w.shape[0]), a.dtype, grid, a.nb, coll, xp=xp)
        return xp.asarray(w), z


def single_global(coll, a, b, itype, vectors, lower, plan, subset=None):
    """(w, Z or None) of whole numpy arrays every rank holds alike, every rank getting all (of
    ``subset``); ``plan`` as single_distributed's."""
    n = a.shape[0]
    w, z = on_root(coll, n, a.dtype, plan.threads, lambda: _host_results(
        whole_eig(np, a, b, itype, vectors, lower, subset), coll))
    if vectors:
        z = np.empty((n, w.shape[0]), dtype=a.dtype) if z is None else np.ascontiguousarray(z)
        z = coll.bcast_host(z)
    return w, z


def _host_results(result, coll):
    w, z, what = result
    coll.note("call", what)
    return to_host(w), (None if z is None else to_host(z))


def on_root(coll, n, dtype, threads, solve):
    """Run ``solve()`` → (w, z) on grid rank 0 while the others wait idle, rank 0 with the node's
    cores (``threads``: the solve's ThreadPolicy); returns (w on every rank, z on rank 0 / None
    elsewhere), w of as many eigenvalues as rank 0 found (a value range's count is known there
    alone). A failure there is raised on every rank."""
    status = np.zeros(2, dtype=np.int64)
    w = z = None
    failure = None
    if coll.grid.rank == 0:
        try:
            with node_cores_lent(threads):
                w, z = solve()
            status[1] = w.shape[0]
        except NotPositiveDefiniteError as exc:
            status[:] = (_NOT_POSITIVE_DEFINITE, exc.info)
        except Exception as exc:  # anything else stops every rank, not only this one
            status[0], failure = _FAILED, exc
    coll.bcast_idle(status)
    if status[0] == _NOT_POSITIVE_DEFINITE:
        raise NotPositiveDefiniteError(int(status[1]), n)
    if status[0] == _FAILED:
        verdict = coll.bcast_obj(None if failure is None else (type(failure).__name__, str(failure)))
        if failure is not None:
            raise failure
        kind = InputError if verdict[0] == InputError.__name__ else RuntimeError
        raise kind(f"{verdict[0]} on rank 0: {verdict[1]}")
    if w is None:
        w = np.empty(int(status[1]), dtype=real_dtype(dtype))
    coll.bcast_host(w)
    return w, z
