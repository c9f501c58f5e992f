"""``solvers.eigh``: scipy.linalg.eigh's interface for the (generalized) symmetric / Hermitian
problem, solved by the distributed sygvd / syevd or, for problems too small to gain from
distribution, by one LAPACK / cuSOLVER call (method.py).

Under MPI every rank calls it with the same arrays (SPMD, as with any collective); every rank
gets the full result back. Results come back as the kind of array that came in (numpy → numpy,
cupy → cupy), dtypes as scipy returns them (real eigenvalues, float32 for float32 / complex64
input). Only the ``lower`` (or upper) triangle of a and b is referenced, and the imaginary parts
of their diagonals are ignored, as LAPACK does.
"""
import numpy as np

from .backend.arrays import array_module, is_cupy_array, is_numpy, real_dtype
from .backend.collectives import create_collectives
from .backend.threads import policy_for
from .distributed.distmatrix import DistMatrix
from .distributed.grid import ProcessGrid, grid_shape
from .errors import InputError
from .method import choose_method
from .single import single_global
from .sygvd.driver import sygvd
from .whole import referenced_finite, whole_eig

DEFAULT_NB = {"cpu": 32, "gpu": 256}


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, comm=None, grid=None, nb=None, collectives="auto",
         method="auto"):
    """Eigenvalues (ascending) and, unless ``eigvals_only``, eigenvectors of a (a, b) pencil.

    Same arguments and returns as scipy.linalg.eigh for real symmetric and complex Hermitian
    input (``overwrite_*`` are accepted and ignored: inputs are never modified). Extra keywords:
    ``comm`` (default MPI.COMM_WORLD), ``grid`` ((pr, pc), default as square as possible),
    ``nb`` (block size), ``collectives`` ('auto' | 'mpi' | 'hpcolls' | 'nccl'), ``method``
    ('auto' | 'distributed' | 'single' | 'replicated', see solvers.method).

    Raises ValueError for bad shapes, ``type`` or non-finite entries in the referenced
    triangle, numpy.linalg.LinAlgError (NotPositiveDefiniteError, with ``.info``) if b is not
    positive definite — identically on every rank.
    """
    del overwrite_a, overwrite_b
    xp = array_module(a)
    a, b, dtype = _validated(xp, a, b, type)
    n = a.shape[0]
    if n == 0:
        w = xp.zeros(0, dtype=real_dtype(dtype))
        return w if eigvals_only else (w, xp.zeros((0, 0), dtype=dtype))
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    policy_for(comm)
    shape = grid_shape(comm.Get_size(), grid)
    chosen, why = choose_method(method, n, comm.Get_size(), not is_numpy(xp), replicable=True)
    alone = comm.Get_size() == 1 and chosen == "single"
    if alone or chosen == "replicated" or (chosen == "single" and is_numpy(xp)):
        if check_finite:   # every rank holds the same arrays: the same verdict, no messages
            for name, x in (("A", a), ("B", b)):
                if x is not None and not referenced_finite(xp, x, lower):
                    raise InputError(f"{name} has NaN or Inf in its referenced "
                                     f"({'lower' if lower else 'upper'}) triangle")
        if alone or chosen == "replicated":
            w, z, _ = whole_eig(xp, a, b, type, not eigvals_only, lower)
            return w if eigvals_only else (w, z)
    pgrid = ProcessGrid(comm, shape)
    try:
        coll = create_collectives(pgrid, collectives, xp)
        if chosen == "single" and is_numpy(xp):
            w, z = single_global(coll, a, b, type, not eigvals_only, lower)
            return w if eigvals_only else (w, z)
        block = nb or min(n, DEFAULT_NB["gpu" if is_cupy_array(a) else "cpu"])
        da = DistMatrix.from_global(a, pgrid, block)
        db = DistMatrix.from_global(b, pgrid, block) if b is not None else None
        w, z = sygvd(da, db, coll, itype=type, jobz="N" if eigvals_only else "V",
                     uplo="L" if lower else "U", check_finite=check_finite, method=chosen)
        return w if eigvals_only else (w, z.to_global(coll))
    finally:
        pgrid.free()


def _validated(xp, a, b, itype):
    """Input checks that need no communication (every rank has the same arrays)."""
    if itype not in (1, 2, 3):
        raise ValueError(f"unknown type {itype!r}: must be 1, 2 or 3")
    a = xp.asarray(a)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"expected square 'a' matrix, got shape {a.shape}")
    arrays = [a]
    if b is not None:
        if array_module(b) is not xp:
            raise ValueError("a and b must both be numpy arrays or both cupy arrays")
        b = xp.asarray(b)
        if b.ndim != 2 or b.shape[0] != b.shape[1]:
            raise ValueError(f"expected square 'b' matrix, got shape {b.shape}")
        if b.shape != a.shape:
            raise ValueError(f"wrong b dimensions {b.shape}, should be {a.shape}")
        arrays.append(b)
    for arr in arrays:
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == np.bool_):
            raise ValueError(f"unsupported dtype {arr.dtype}")
    dtype = _working_dtype(np.result_type(*[arr.dtype for arr in arrays]))
    a = xp.ascontiguousarray(a, dtype=dtype)
    b = xp.ascontiguousarray(b, dtype=dtype) if b is not None else None
    return a, b, dtype


def _working_dtype(common):
    """As LAPACK through scipy: single precision stays single (complex64 stays complex64),
    everything else is solved in double (complex128 if anything is complex)."""
    single = common in (np.float32, np.float16, np.complex64)
    if np.issubdtype(common, np.complexfloating):
        return np.dtype(np.complex64 if single else np.complex128)
    return np.dtype(np.float32 if single else np.float64)
