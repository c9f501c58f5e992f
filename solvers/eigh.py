"""``solvers.eigh``: scipy.linalg.eigh's interface for the (generalized) symmetric / Hermitian
problem, solved by the distributed sygvd / syevd or, for problems too small to gain from
distribution, by one LAPACK / cuSOLVER call (the method: solvers/plan.py).

Under MPI every rank calls it with the same arrays (SPMD, as with any collective); every rank
gets the full result back. Results come back as the kind of array that came in (numpy → numpy,
cupy → cupy), dtypes as scipy returns them (real eigenvalues, float32 for float32 / complex64
input). Only the ``lower`` (or upper) triangle of a and b is referenced, and the imaginary parts
of their diagonals are ignored, as LAPACK does.
"""
import math

import scipy.linalg

from .agreement import Agreement, fingerprint
from .arguments import communicator, working_arrays
from .backend.arrays import array_module, is_numpy, real_dtype, to_host
from .backend.collectives import create_collectives
from .backend.threads import policy_for
from .cholesky import CholeskyFactor
from .distributed.distmatrix import DistMatrix
from .distributed.grid import ProcessGrid, grid_shape
from .errors import InputError
from .plan import check_reduction, resolve
from .single import single_global
from .subset import EigenRange, positions
from .whole import referenced_finite, whole_eig

# scipy.linalg.eigh's drivers, and what runs for each in the distributed stages.
SCIPY_DRIVERS = ("ev", "evd", "evr", "evx", "gv", "gvd", "gvx")
# The drivers that take subsets, and the tridiagonal method each runs (stevr.py), as
# LAPACK's: dsyevr bisection + MRRR, dsyevx / dsygvx bisection + inverse iteration.
_SUBSET_DRIVERS = {"evr": "mrrr", "evx": "invit", "gvx": "invit"}


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, subset_by_index=None, subset_by_value=None, driver=None,
         comm=None, grid=None, nb=None, collectives="auto", method="auto", reduction="auto",
         check_ranks=True):
    """Eigenvalues (ascending) and, unless ``eigvals_only``, eigenvectors of a (a, b) pencil.

    Same arguments and returns as scipy.linalg.eigh for real symmetric and complex Hermitian
    input (``overwrite_*`` are accepted and ignored: inputs are never modified), subsets
    included: ``subset_by_index=[lo, hi]`` (0-based, inclusive) or ``subset_by_value=[vl, vu]``
    (eigenvalues in (vl, vu]) give w of k entries and z of n × k (k = 0: shapes (0,) and (n, 0)).
    ``driver`` takes scipy's names, with scipy's rules on which fit the problem; in the
    distributed stages 'ev', 'evd', 'gv', 'gvd' run divide and conquer (stedc) for all
    eigenpairs, 'evr' bisection + MRRR (stebz + stemr) and 'evx', 'gvx' bisection + inverse
    iteration (stein.py), for subsets or all; a subset without a
    driver takes whichever is faster for its size (stevr.py); the one-call methods
    on CPU pass it to scipy itself. ``b`` may also be a
    ``solvers.cholesky(b)`` factor: potrf is then skipped (the distributed method, on the
    factor's grid and block size). Extra keywords: ``comm`` (default MPI.COMM_WORLD), ``grid``
    ((pr, pc), default as square as possible), ``nb`` (block size), ``collectives`` ('auto' |
    'mpi' | 'hpcolls' | 'nccl'), ``method`` ('auto' | 'distributed' | 'single' | 'replicated',
    see solvers.plan), ``reduction`` ('auto' | '1stage' | '2stage': the distributed stages'
    reduction to tridiagonal form, see solvers.plan). Every choice is made once, here, into
    one SolverPlan the stages receive.

    Before any other message the ranks compare what each was given (one allgather: the
    arguments, the shapes and dtypes and, with ``check_ranks`` (default), a hash of sampled
    entries of a's and b's referenced triangles): ranks given different problems all raise
    RankMismatchError (a ValueError) naming what differs on which ranks, and an error one rank's
    checks raise is raised on every rank.

    Raises ValueError for bad shapes, ``type``, subsets, drivers or non-finite entries in the
    referenced triangle, numpy.linalg.LinAlgError (NotPositiveDefiniteError, with ``.info``) if
    b is not positive definite — identically on every rank.
    """
    del overwrite_a, overwrite_b
    factor = b if isinstance(b, CholeskyFactor) else None
    if comm is None and factor is not None and factor.grid is not None:   # not freed
        comm = factor.grid.comm
    comm = communicator(comm)
    with Agreement(comm, "solvers.eigh") as call:
        call.record(lower=lower, eigvals_only=eigvals_only, type=type, check_finite=check_finite,
                    subset_by_index=subset_by_index, subset_by_value=subset_by_value,
                    driver=driver, grid=grid, nb=nb, collectives=collectives, method=method,
                    reduction=reduction, b=_kind_of_b(b), check_ranks=check_ranks)
        xp = array_module(a)
        if factor is not None:
            a, _, dtype = working_arrays(xp, a, None, type)
            _check_factor(factor, a, dtype, comm, grid, nb)
        else:
            a, b, dtype = working_arrays(xp, a, b, type)
        call.record(shape=a.shape, dtype=dtype.name, arrays=xp.__name__)
        n = a.shape[0]
        if check_ranks and call.comparing:
            call.record(**{"entries of a": fingerprint(xp, a, lower)})
            if b is not None and factor is None:
                call.record(**{"entries of b": fingerprint(xp, b, lower)})
        if n:      # as scipy: a 0 x 0 problem before the subset is looked at
            subset = _subset(subset_by_index, subset_by_value, n)
            generalized = b is not None or factor is not None
            _check_driver(driver, generalized, not subset.is_all)
            if driver in _SUBSET_DRIVERS:              # for every eigenpair too
                subset = (EigenRange.by_index(1, n) if subset.is_all else subset).solved_by(_SUBSET_DRIVERS[driver])
            check_reduction(reduction)     # a bad name fails before any work
    if n == 0:
        w = xp.zeros(0, dtype=real_dtype(dtype))
        return w if eigvals_only else (w, xp.zeros((0, 0), dtype=dtype))
    if factor is not None:
        return _factored(a, factor, lower, eigvals_only, type, check_finite, subset, method, reduction)
    threads = policy_for(comm)
    shape = grid_shape(comm.Get_size(), grid)
    plan = resolve(xp, n, comm.Get_size(), complex_data=dtype.kind == "c", nb=nb, method=method,
                   reduction=reduction, replicable=True, threads=threads)
    chosen = plan.method
    alone = comm.Get_size() == 1 and chosen == "single"
    if alone or chosen == "replicated" or (chosen == "single" and is_numpy(xp)):
        if check_finite:   # every rank holds the same arrays: the same verdict, no messages
            for name, x in (("A", a), ("B", b)):
                if x is not None and not referenced_finite(xp, x, lower):
                    raise InputError(f"{name} has NaN or Inf in its referenced "
                                     f"({'lower' if lower else 'upper'}) triangle")
        if alone or chosen == "replicated":
            w, z = _whole(xp, a, b, type, eigvals_only, lower, subset, driver,
                          subset_by_index, subset_by_value)
            return w if eigvals_only else (w, z)
    pgrid = ProcessGrid(comm, shape)
    try:
        coll = create_collectives(pgrid, collectives, xp)
        if chosen == "single" and is_numpy(xp):
            w, z = single_global(coll, a, b, type, not eigvals_only, lower, plan, subset)
            return w if eigvals_only else (w, z)
        da = DistMatrix.from_global(a, pgrid, plan.nb)
        db = DistMatrix.from_global(b, pgrid, plan.nb) if b is not None else None
        return _by_sygvd(da, db, coll, eigvals_only, itype=type, uplo="L" if lower else "U",
                         check_finite=check_finite, subset=subset, plan=plan)
    finally:
        pgrid.free()


def _kind_of_b(b):
    """What the ranks compare of b before its shape is known: none, an array, a factor."""
    return "none" if b is None else "factor" if isinstance(b, CholeskyFactor) else "array"


def _factored(a, factor, lower, eigvals_only, itype, check_finite, subset, method, reduction):
    """eigh against a CholeskyFactor: the distributed stages on its grid, potrf skipped. The
    factor is lower; an upper-triangle A is passed as its conjugate transpose, whose lower
    triangle holds the same numbers (conjugated) as A's upper one, so no factor is moved."""
    if method not in ("auto", "distributed"):
        raise InputError(f"method {method!r} takes B itself; a solvers.cholesky factor is solved "
                         "by the distributed method")
    if not lower:
        a = a.conj().T
    grid = factor.grid
    plan = resolve(factor.xp, a.shape[0], grid.size, complex_data=a.dtype.kind == "c", nb=factor.nb,
                   method="distributed", reduction=reduction, b_factored=True,
                   threads=policy_for(grid.comm))
    coll = create_collectives(grid, factor.collectives, factor.xp)
    da = DistMatrix.from_global(factor.xp.ascontiguousarray(a), grid, factor.nb)
    return _by_sygvd(da, factor.factor, coll, eigvals_only, itype=itype, uplo="L",
                     check_finite=check_finite, subset=subset, b_factored=True, plan=plan)


def _by_sygvd(a, b, coll, eigvals_only, **options):
    """sygvd on the DistMatrix inputs; the eigenvectors gathered whole on every rank."""
    # Imported here, not at the top: `python -m solvers.sygvd` runs that module as __main__, and
    # runpy warns where the package's own import (which imports this module) loaded it already.
    from .sygvd import sygvd
    w, z = sygvd(a, b, coll, jobz="N" if eigvals_only else "V", **options)
    return w if eigvals_only else (w, z.to_global(coll))


def _check_factor(factor, a, dtype, comm, grid, nb):
    if factor.factor is None:
        raise ValueError("this solvers.cholesky factor was freed")
    if factor.shape != a.shape:
        raise ValueError(f"wrong b dimensions {factor.shape}, should be {a.shape}")
    if factor.dtype != dtype:
        raise ValueError(f"the factor is {factor.dtype} but a is solved in {dtype}: factor B "
                         f"in the same precision (solvers.cholesky(b.astype(...)))")
    if comm is not None and comm is not factor.grid.comm:
        raise ValueError("comm differs from the communicator the factor was made on")
    if grid is not None and tuple(grid) != factor.grid.shape:
        raise ValueError(f"grid {tuple(grid)} differs from the factor's {factor.grid.shape}")
    if nb is not None and nb != factor.nb:
        raise ValueError(f"nb {nb} differs from the factor's block size {factor.nb}")


def _subset(by_index, by_value, n):
    """scipy's subset keywords as an EigenRange, with scipy's checks and messages."""
    if by_index is not None and by_value is not None:
        raise ValueError("Either index or value subset can be requested.")
    if by_index is not None:
        lo, hi = (int(x) for x in by_index)
        if not (0 <= lo <= hi < n):
            raise ValueError(f"Requested eigenvalue indices are not valid. Valid range is "
                             f"[0, {n - 1}] and start <= end, but start={lo}, end={hi} is given")
        return EigenRange.by_index(lo + 1, hi + 1)
    if by_value is not None:
        given_lo, given_hi = by_value            # scipy's message prints them as given
        lo, hi = float(given_lo), float(given_hi)
        if not (-math.inf <= lo < hi <= math.inf):
            raise ValueError(f"Requested eigenvalue bounds are not valid. Valid range is "
                             f"(-inf, inf) and low < high, but low={given_lo}, high={given_hi} "
                             "is given")
        return EigenRange.by_value(lo, hi)
    return EigenRange.all()


def _check_driver(driver, generalized, subset):
    """scipy's rules: a known name, one fitting the problem (gv* need b, ev* refuse it), and
    one that can compute subsets if a subset is asked."""
    if driver is None:
        return
    if driver not in SCIPY_DRIVERS:
        raise ValueError(f'"{driver}" is unknown. Possible values are "None", "'
                         + '", "'.join(SCIPY_DRIVERS) + '".')
    if not generalized and driver.startswith("g"):
        raise ValueError(f"{driver} requires input b array to be supplied for generalized "
                         "eigenvalue problems.")
    if generalized and driver.startswith("e"):
        raise ValueError(f'"{driver}" does not accept input b array for standard eigenvalue '
                         "problems.")
    if subset and driver not in _SUBSET_DRIVERS:
        raise ValueError(f'"{driver}" cannot compute subsets of eigenvalues')


def _whole(xp, a, b, itype, eigvals_only, lower, subset, driver, by_index, by_value):
    """The whole problem by one library call on this rank. On CPU with a subset or a driver
    other than evd / gvd: scipy.linalg.eigh itself with those arguments (its bits, and work
    that scales with k); otherwise whole.py's call, a subset kept from its full result."""
    if is_numpy(xp) and (not subset.is_all or driver not in (None, "evd", "gvd")):
        result = scipy.linalg.eigh(a, b, lower=lower, eigvals_only=eigvals_only, type=itype,
                                   check_finite=False, subset_by_index=by_index,
                                   subset_by_value=by_value, driver=driver)
        return (result, None) if eigvals_only else result
    w, z, _ = whole_eig(xp, a, b, itype, not eigvals_only, lower)
    keep = positions(to_host(w), subset)
    return w[keep], (None if z is None else xp.ascontiguousarray(z[:, keep]))
