"""The symmetric tridiagonal eigenproblem T y = λ y (LAPACK stevd: divide and conquer).

T is real for complex Hermitian problems too (hetrd makes its off-diagonal real), so this stage
is real for every dtype; the eigenvectors take the problem's dtype when they are distributed.

T is tiny next to the dense problem (2n numbers), so it is replicated: d and e are first
broadcast from rank 0 — every rank then solves the *same* input and obtains the same
eigenvectors bit for bit, which matters because each rank keeps only its own block-cyclic
rows/columns of the eigenvector matrix (a sign flip on one rank would corrupt a column).
The whole problem on one rank (one-rank runs, and every rank with tridiagonal='replicated') is
stedc.py's divide and conquer: in a GPU run on the device (secular equations and eigenvector
GEMMs; blocks of order <= plan.STEDC_LEAF by LAPACK on the host, all of them up front and spread
over this rank's share of the cores), on the CPU its two halves by LAPACK's dstevd (concurrently) and
the top merge by stedc.py. Over P > 1 ranks each rank computes only its rows of the eigenvector
matrix (stedc_distributed.py). For a subset (``select``) every eigenvalue is still computed, but
the top merge forms only the wanted eigenvectors: the same eigenvalue bits as the whole solve.
Eigenvalues alone come from LAPACK on the host (O(n²) work).
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.linalg

from .backend.arrays import to_host
from .backend.lapack import stevd_vectors
from .backend.threads import blas_threads_lent
from .distributed.columns import RankColumns, rows_to_block_cyclic, rows_to_rank_columns
from .distributed.descriptor import Descriptor
from .distributed.distmatrix import DistMatrix
from .distributed.indexing import local_indices
from .plan import resolve
from .stebz import replicated_tridiagonal, share, stebz
from .stedc import stedc
from .stedc_distributed import for_backend, stedc_distributed
from .stein import multisection


def stevd(d, e, coll, vectors_like=None, select=None, plan=None):
    """Eigenvalues (ascending, replicated xp array) and, if ``vectors_like`` (a DistMatrix
    layout) is given, the eigenvectors distributed in that layout. ``select`` = (il, iu)
    (1-based, inclusive) keeps only those eigenpairs: w of k = iu - il + 1 entries and Z of
    n × k in the layout's block size and grid (all eigenvalues are computed, and only the
    wanted eigenvectors in divide and conquer's top merge). ``plan``: the solve's SolverPlan
    (how the eigenvectors are made over the ranks, divide and conquer's leaves, where eigenvalues
    alone come from; default: plan.resolve's for d's order on coll's grid)."""
    n = d.shape[0]
    plan = plan or resolve(coll.xp, n, coll.grid.size)
    wanted = _wanted(n, select)
    first, last = wanted or (0, n)
    want = vectors_like is not None
    if want:
        grid = vectors_like.grid
        desc = Descriptor.create(n, last - first, vectors_like.nb, vectors_like.nb, grid)
    if n == 0:
        return d.copy(), (vectors_like.like() if want else None)
    if not want and plan.eigenvalues_on_device:
        coll.note("eigenvalues_by", plan.eigenvalues_why)
        d_host, e_host = replicated_tridiagonal(d, e, coll)
        return coll.xp.asarray(stebz(d_host, e_host, first + 1, last, coll, multisection(coll.xp))), None
    if want and _by_rows(coll, plan):
        w, qt_mine, bounds = _rows(d, e, coll, wanted, plan)
        z = rows_to_block_cyclic(qt_mine, bounds, desc, grid, coll, vectors_like.dtype, coll.xp)
        return w, z
    w, z = _replicated(d, e, coll, want, wanted, plan)
    if not want:
        return w, None
    xp = coll.xp
    rows = xp.asarray(local_indices(desc.m, desc.mb, grid.myrow, 0, grid.nprow))
    cols = xp.asarray(local_indices(desc.n, desc.nb, grid.mycol, 0, grid.npcol))
    # Real eigenvectors of the real T; a complex problem's back-transformation makes them complex.
    local = xp.ascontiguousarray(z[rows[:, None], cols[None, :]], dtype=vectors_like.dtype)
    return w, DistMatrix(local, desc, grid)


def stevd_columns(d, e, coll, select=None, plan=None):
    """Eigenvalues (ascending, replicated xp array; those of ``select`` = (il, iu) only) and
    this rank's equal share of the eigenvector columns, whole (RankColumns, on the backend):
    what a back-transformation on whole columns (two-stage's Q2) takes before they are moved
    into the block-cyclic layout. Over P > 1 ranks the rows per rank of stedc_distributed.py
    are exchanged into those columns (one Alltoallv): no rank holds the n × n matrix. ``plan``
    as stevd's."""
    xp, grid = coll.xp, coll.grid
    n = d.shape[0]
    plan = plan or resolve(xp, n, grid.size)
    wanted = _wanted(n, select)
    first, last = wanted or (0, n)
    k = last - first
    bounds = np.array([share(k, grid.size, r)[0] for r in range(grid.size)] + [k])
    if n and _by_rows(coll, plan):
        w, qt_mine, row_bounds = _rows(d, e, coll, wanted, plan)
        mine = rows_to_rank_columns(qt_mine, row_bounds, bounds, coll, w.dtype)
        return w, RankColumns(mine, bounds, np.arange(k))
    w, z = _replicated(d, e, coll, True, wanted, plan) if n else (d.copy(), xp.zeros((0, 0), dtype=d.dtype))
    mine = z[:, int(bounds[grid.rank]):int(bounds[grid.rank + 1])]
    return w, RankColumns(mine, bounds, np.arange(k))


def _wanted(n, select):
    """The 0-based (first, last) of ``select`` = (il, iu), 1-based inclusive; None for all n."""
    if select is None or (select[0] == 1 and select[1] == n):
        return None
    return select[0] - 1, select[1]


def _replicated(d, e, coll, want, wanted, plan):
    """(w, Z or None) of the tridiagonal (d, e) broadcast from rank 0, on the backend, the
    eigenpairs ``wanted`` = (first, last) only if given: the same input, hence the same bits,
    on every rank."""
    xp = coll.xp
    coll.bcast(d, root=0, scope="all")
    coll.bcast(e, root=0, scope="all")
    first, last = wanted or (0, d.shape[0])
    if not want:
        w, _ = _stevd_host(to_host(d), to_host(e), False)
        return xp.asarray(w[first:last]), None
    coll.note("vectors_by", "divide and conquer, whole on every rank")
    timings = {}
    w, z = stedc(xp, to_host(d).astype(np.float64), to_host(e).astype(np.float64),
                 _stevd_leaves, plan.stedc_leaf, timings, wanted)
    _note_solve(coll, timings, wanted, d.shape[0])
    return w.astype(d.dtype, copy=False), z.astype(d.dtype, copy=False)


def _by_rows(coll, plan):
    """Whether the eigenvectors are made by rows per rank (stedc_distributed.py)."""
    coll.note("tridiagonal", f"{plan.tridiagonal} [{plan.tridiagonal_why}]")
    return plan.tridiagonal == "rows"


def _rows(d, e, coll, wanted, plan):
    """(w, this rank's rows of the eigenvector matrix transposed, every rank's row bounds) by
    stedc_distributed.py, d and e broadcast from rank 0 first; the eigenvalues are bitwise the
    same everywhere; the eigenpairs ``wanted`` = (first, last) only if given."""
    xp, grid = coll.xp, coll.grid
    coll.bcast(d, root=0, scope="all")
    coll.bcast(e, root=0, scope="all")
    timings = {}
    solve_alone = for_backend(xp, _stevd_leaves, plan.stedc_leaf)
    w, qt_mine, bounds = stedc_distributed(xp, to_host(d).astype(np.float64),
                                           to_host(e).astype(np.float64), coll, solve_alone,
                                           timings, wanted)
    _note_solve(coll, timings, wanted, d.shape[0])
    lo, hi = bounds[grid.rank], bounds[grid.rank + 1]
    coll.note("vectors_by", f"divide and conquer by rows over {grid.size} ranks "
                            f"(rows {lo}..{hi - 1} here)")
    return w.astype(d.dtype), qt_mine, bounds


def _note_solve(coll, timings, wanted, n):
    """Stage notes: seconds per phase of divide and conquer, and how many eigenvectors its
    top merge formed."""
    for phase, seconds in timings.items():
        coll.note(f"stedc_{phase}_s", seconds)
    if wanted is not None:
        coll.note("top_merge_vectors", f"{wanted[1] - wanted[0]} of {n} (the wanted ones)")


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
