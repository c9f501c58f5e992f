"""stemr: the eigenvectors of selected eigenvalues of the symmetric tridiagonal T, distributed
(LAPACK's MRRR, dstemr's algorithm: vectors orthogonal without reorthogonalization).

No rank holds them all. Every rank computes the same root representation of T for the wanted
eigenvalues il..iu (dlarre, through backend.lapack.MrrrRoot: the same input, so the same bits),
then its own slice of the vectors from that one root (dlarrv with DOL..DOU). The vectors are
those of one representation tree, so they are as orthogonal as one dstemr call's, whatever the
slices: separate dstemr calls per slice would each choose their own root, and across calls the
vectors are only orthogonal to ε‖T‖ / gap (a loss of orthogonality measured at ~600 n ε on a
random 23 × 23 Hermitian problem cut in two). A slice boundary is still only placed between two
of the root's clusters (or split blocks), so that no cluster's refinement is shared by two ranks.

MRRR stores a split T block by block (ascending inside each block). The slices are of that
order; each vector's place among the ascending eigenvalues comes from its Rayleigh quotient
(gathered, k numbers), and one Alltoallv moves the vectors into the block-cyclic n × k layout.
Memory and work per rank: O(n k / P) plus O(n + k).

Where MRRR finds no representation for a tight cluster (dlarrv fails: glued Wilkinson matrices
do this), every rank instead takes bisection and inverse iteration for its group (dstebz +
dstein), as dsyevr does when dstemr fails; then a group is only cut where dstein would not
reorthogonalize across the cut, so a cluster's vectors are computed together.
"""
import numpy as np

from .backend.arrays import to_host
from .backend.lapack import MrrrRoot, stein_vectors, stemr_vectors
from .distributed.columns import RankColumns, columns_to_block_cyclic
from .stebz import share

MIN_RELATIVE_GAP = 1e-3   # dlarrv's MINRGP, as dstemr sets it: what separates the root's clusters
STEIN_CLUSTER = 1e-3      # dstein reorthogonalizes eigenvalues closer than this times ‖T‖₁


def group_bounds(allowed, k, parts):
    """Boundaries b₀ = 0 ≤ b₁ ≤ … ≤ b_parts = k of ``parts`` contiguous groups of k items, each
    cut at one of the ``allowed`` positions (sorted; a cut at c separates item c-1 from c), as
    near to the even share as such a place allows (a cut with no such place left goes to k)."""
    allowed = np.asarray(allowed, dtype=np.int64)
    bounds = [0]
    for r in range(1, parts):
        target = share(k, parts, r)[0]
        cut = k
        if allowed.size:
            at = int(np.searchsorted(allowed, target))
            near = [int(allowed[i]) for i in (at - 1, at) if 0 <= i < allowed.size]
            cut = min(near, key=lambda c: (abs(c - target), c))
        bounds.append(max(cut, bounds[-1]))
    return np.array(bounds + [k])


def stein_cuts(w, d, e):
    """Where the ascending eigenvalues w of (d, e) may be cut into groups whose vectors are computed
    apart: gaps wider than STEIN_CLUSTER ‖T‖₁, across which dstein does not reorthogonalize (never
    between equal eigenvalues: at ‖T‖ = 0 every gap is 0)."""
    return np.flatnonzero(np.diff(w) > STEIN_CLUSTER * norm1(d, e)) + 1


def root_cuts(root):
    """The places (storage order) where the root's wanted eigenvalues may be cut: between split
    blocks, and between the root's clusters (relative gap at least MIN_RELATIVE_GAP)."""
    m = root.m
    w, gap, block = root.w[:m], root.wgap[:m], root.iblock[:m]
    separated = (gap[:-1] >= MIN_RELATIVE_GAP * np.abs(w[:-1])) | (block[1:] != block[:-1])
    return np.flatnonzero(separated) + 1


def stemr(d, e, il, w, layout_nb, grid, coll, dtype, xp):
    """Z (DistMatrix n × k, block size ``layout_nb``, of ``dtype`` on backend ``xp``) holding the
    eigenvectors of eigenvalues il..il+k-1 (1-based) of the tridiagonal (d, e), w their values
    (ascending, the same on every rank). Notes how many vectors this rank computed."""
    cols = stemr_columns(d, e, il, w, grid, coll)
    return columns_to_block_cyclic(*cols, d.shape[0], w.shape[0], layout_nb, grid, coll, dtype, xp)


def stemr_columns(d, e, il, w, grid, coll):
    """The same eigenvectors as stemr's, each rank's group whole on it (RankColumns, host
    arrays): what a back-transformation on whole columns takes before the Alltoallv."""
    n, k = d.shape[0], w.shape[0]
    iu = il + k - 1
    if k and n < 3:     # dstemr's closed form; at most two vectors, on rank 0
        bounds = np.array([0] + [k] * grid.size)
        mine = stemr_vectors(d, e, il, iu)[1] if grid.rank == 0 else np.empty((n, 0), order="F")
        order = np.arange(k)
    elif k:
        bounds, mine, order = _vectors(d, e, il, w, grid, coll)
    else:
        bounds, mine, order = np.zeros(grid.size + 1, dtype=np.int64), np.empty((n, 0)), np.arange(0)
    start, stop = int(bounds[grid.rank]), int(bounds[grid.rank + 1])
    coll.note("vectors_this_rank", stop - start)
    coll.note("largest_group", int(np.diff(bounds).max()) if k else 0)
    return RankColumns(mine, bounds, order)


def _vectors(d, e, il, w, grid, coll):
    """(bounds, this rank's vectors, storage-to-column order) for eigenpairs il..il+k-1."""
    k = w.shape[0]
    iu = il + k - 1
    root = MrrrRoot(d, e, il, iu)   # the same bits on every rank: fails on all or on none
    bounds = group_bounds(root_cuts(root), k, grid.size)
    start, stop = int(bounds[grid.rank]), int(bounds[grid.rank + 1])
    mine, failure = _agreed(coll, lambda: root.vectors(start + 1, stop)[1])
    if failure is None:
        coll.note("vectors_by", "MRRR (dlarre root shared, dlarrv slices)")
        return bounds, mine, _ascending_order(root, mine, d, e, bounds, grid, coll)
    # As dsyevr does when dstemr fails: bisection and inverse iteration, each rank's group cut
    # only where dstein would not reorthogonalize across the cut.
    coll.note("vectors_by", f"dstebz + dstein (MRRR failed: {failure})")
    bounds = group_bounds(stein_cuts(w, d, e), k, grid.size)
    start, stop = int(bounds[grid.rank]), int(bounds[grid.rank + 1])
    mine, failure = _agreed(coll, lambda: stein_vectors(d, e, il + start, il + stop - 1)[1])
    if failure is not None:
        raise RuntimeError(f"stemr: no eigenvectors for eigenpairs {il}..{iu}: {failure}")
    return bounds, mine, np.arange(k)


def _agreed(coll, compute):
    """(compute(), None) if it succeeded on every rank, else (None, the reason): a LAPACK
    failure on one rank must not leave the others waiting in the next collective."""
    try:
        result, failure = compute(), None
    except RuntimeError as error:
        result, failure = None, str(error)
    if coll.any_flag(failure is not None):
        return None, failure or "on another rank"
    return result, None


def tridiagonal_product(d, e, z):
    """T z for the tridiagonal (d, e) and a block of columns z (d, e and z on one backend)."""
    tz = d[:, None] * z
    tz[:-1] += e[:, None] * z[1:]
    tz[1:] += e[:, None] * z[:-1]
    return tz


def norm1(d, e):
    """‖T‖₁ of the tridiagonal (d, e)."""
    col = np.abs(d).copy()
    col[:-1] += np.abs(e)
    col[1:] += np.abs(e)
    return float(col.max()) if col.size else 0.0


def _ascending_order(root, mine, d, e, bounds, grid, coll):
    """For each storage position of the root's vectors, its place among the ascending
    eigenvalues: the identity for an unsplit T (one block is stored ascending), else the stable
    sort of the vectors' Rayleigh quotients yᵀ T y (gathered as a zero-padded sum: each entry
    has one contributor, so every rank gets the same bits and the same order)."""
    k = root.m
    if np.all(root.iblock[:k] == root.iblock[0]):
        return np.arange(k)
    quotients = np.zeros(k)
    start, stop = int(bounds[grid.rank]), int(bounds[grid.rank + 1])
    if stop > start:
        quotients[start:stop] = np.einsum("ij,ij->j", mine, tridiagonal_product(d, e, mine))
    quotients = to_host(coll.allreduce(coll.xp.asarray(quotients), scope="all"))
    place = np.empty(k, dtype=np.int64)
    place[np.argsort(quotients, kind="stable")] = np.arange(k)
    return place
