"""``solvers.eigh``: scipy.linalg.eigh's interface for the (generalized) symmetric problem,
solved by the distributed sygvd.

Under MPI every rank calls it with the same arrays (SPMD, as with any collective); each rank
keeps its own blocks, the solve is distributed over all ranks of ``comm``, and every rank gets
the full result back. Results come back as the kind of array that came in (numpy → numpy,
cupy → cupy). Only the ``lower`` (or upper) triangle of a and b is referenced.
"""
import numpy as np

from .backend.arrays import array_module, is_cupy_array
from .backend.collectives import create_collectives
from .distributed.distmatrix import DistMatrix
from .distributed.grid import ProcessGrid
from .sygvd.driver import sygvd

DEFAULT_NB = {"cpu": 32, "gpu": 256}


def eigh(a, b=None, *, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         type=1, check_finite=True, comm=None, grid=None, nb=None, collectives="auto"):
    """Eigenvalues (ascending) and, unless ``eigvals_only``, eigenvectors of a (a, b) pencil.

    Same arguments and returns as scipy.linalg.eigh for real symmetric input (``overwrite_*``
    are accepted and ignored: inputs are never modified). Extra keywords: ``comm`` (default
    MPI.COMM_WORLD), ``grid`` ((pr, pc), default as square as possible), ``nb`` (block size),
    ``collectives`` ('auto' | 'mpi' | 'hpcolls' | 'nccl').

    Raises ValueError for bad shapes, ``type`` or non-finite entries in the referenced
    triangle, numpy.linalg.LinAlgError (NotPositiveDefiniteError, with ``.info``) if b is not
    positive definite — identically on every rank.
    """
    del overwrite_a, overwrite_b
    xp = array_module(a)
    a, b, dtype = _validated(xp, a, b, type)
    n = a.shape[0]
    if n == 0:
        w = xp.zeros(0, dtype=dtype)
        return w if eigvals_only else (w, xp.zeros((0, 0), dtype=dtype))
    if comm is None:
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
    pgrid = ProcessGrid(comm, grid)
    try:
        coll = create_collectives(pgrid, collectives, xp)
        block = nb or min(n, DEFAULT_NB["gpu" if is_cupy_array(a) else "cpu"])
        da = DistMatrix.from_global(a, pgrid, block)
        db = DistMatrix.from_global(b, pgrid, block) if b is not None else None
        w, z = sygvd(da, db, coll, itype=type, jobz="N" if eigvals_only else "V",
                     uplo="L" if lower else "U", check_finite=check_finite)
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
        if xp.iscomplexobj(arr):
            raise ValueError("complex matrices are not supported (real symmetric only)")
        if not (np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
                or arr.dtype == np.bool_):
            raise ValueError(f"unsupported dtype {arr.dtype}")
    common = np.result_type(*[arr.dtype for arr in arrays])
    # As LAPACK: single precision stays single, everything else is solved in double.
    dtype = np.dtype(np.float32) if common == np.float32 or common == np.float16 else np.dtype(np.float64)
    a = xp.ascontiguousarray(a, dtype=dtype)
    b = xp.ascontiguousarray(b, dtype=dtype) if b is not None else None
    return a, b, dtype
