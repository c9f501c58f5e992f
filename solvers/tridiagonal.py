"""The symmetric tridiagonal eigenproblem T y = λ y (LAPACK stevd: divide and conquer).

T is real for complex Hermitian problems too (hetrd makes its off-diagonal real), so this stage
is real for every dtype; the eigenvectors take the problem's dtype when they are distributed.

T is tiny next to the dense problem (2n numbers), so it is replicated: d and e are first
broadcast from rank 0 — every rank then solves the *same* input and obtains the same
eigenvectors bit for bit, which matters because each rank keeps only its own block-cyclic
rows/columns of the eigenvector matrix (a sign flip on one rank would corrupt a column).
On GPU the eigenvectors come from stedc.py (divide and conquer: the secular equations and the
eigenvector GEMMs on the device, blocks of order <= STEDC_LEAF by LAPACK on the host, all of them
up front and spread over this rank's share of the cores), and
eigenvalues alone from LAPACK on the host (O(n²) work; the dense device eigensolver used
before repeated a whole reduction to tridiagonal form).
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg

from .backend.arrays import is_numpy, to_host
from .backend.lapack import stevd_vectors
from .backend.threads import blas_threads_lent
from .distributed.columns import RankColumns
from .distributed.distmatrix import DistMatrix
from .stebz import share
from .stedc import stedc

STEDC_LEAF = 512   # order of the blocks the GPU divide and conquer hands to LAPACK


def stevd(d, e, coll, vectors_like=None):
    """Eigenvalues (ascending, replicated xp array) and, if ``vectors_like`` (a DistMatrix
    layout) is given, the eigenvectors distributed in that layout."""
    want = vectors_like is not None
    if d.shape[0] == 0:
        return d.copy(), (vectors_like.like() if want else None)
    w, z = _replicated(d, e, coll, want)
    if not want:
        return w, None
    rows, cols = vectors_like.device_index()
    xp = coll.xp
    # Real eigenvectors of the real T; a complex problem's back-transformation makes them complex.
    local = xp.ascontiguousarray(z[rows[:, None], cols[None, :]], dtype=vectors_like.dtype)
    return w, DistMatrix(local, vectors_like.desc, vectors_like.grid)


def stevd_columns(d, e, coll):
    """Eigenvalues (ascending, replicated xp array) and this rank's equal share of the
    eigenvector columns, whole (RankColumns, on the backend): what a back-transformation on
    whole columns (two-stage's Q2) takes before they are moved into the block-cyclic layout."""
    xp, grid = coll.xp, coll.grid
    n = d.shape[0]
    w, z = _replicated(d, e, coll, True) if n else (d.copy(), xp.zeros((0, 0), dtype=d.dtype))
    bounds = np.array([share(n, grid.size, r)[0] for r in range(grid.size)] + [n])
    mine = z[:, int(bounds[grid.rank]):int(bounds[grid.rank + 1])]
    return w, RankColumns(mine, bounds, np.arange(n))


def _replicated(d, e, coll, want):
    """(w, Z or None) of the tridiagonal (d, e) broadcast from rank 0, on the backend: the same
    input, hence the same bits, on every rank."""
    xp = coll.xp
    coll.bcast(d, root=0, scope="all")
    coll.bcast(e, root=0, scope="all")
    if is_numpy(xp):
        w, z = _stevd_host(to_host(d), to_host(e), want)
    else:
        w, z = _eigh_device(xp, d, e, want, coll)
    return xp.asarray(w), (xp.asarray(z) if want else None)


def _stevd_host(d, e, want):
    n = d.shape[0]
    e = e if n > 1 else np.zeros(1, dtype=d.dtype)   # LAPACK wants max(n-1, 1) entries
    driver = scipy.linalg.lapack.get_lapack_funcs("stevd", (d,))
    w, z, info = driver(d, e, compute_v=int(want))
    if info:
        raise RuntimeError(f"stevd did not converge (info={info})")
    return w, (z if want else None)


def _stevd_leaves(blocks, workers=None):
    """[(w, Z)] of the (d, e) host blocks, by LAPACK: each block with one BLAS thread, the
    blocks spread over ``workers`` threads (default: this rank's BLAS threads, which the CLI's
    share_cores sets to its share of the node's cores). The blocks are independent and each
    is solved the same way whatever the thread count, so the results do not depend on it."""
    with blas_threads_lent() as lent:
        with ThreadPoolExecutor(max(1, min(workers or lent, len(blocks)))) as pool:
            return list(pool.map(lambda block: stevd_vectors(*block), blocks))


def _eigh_device(xp, d, e, want, coll):
    if not want:
        return _stevd_host(to_host(d), to_host(e), False)
    timings = {}
    w, z = stedc(xp, d.astype(np.float64), e.astype(np.float64), _stevd_leaves, STEDC_LEAF, timings)
    for phase, seconds in timings.items():
        coll.note(f"stedc_{phase}_s", seconds)
    return w.astype(d.dtype), z.astype(d.dtype)
