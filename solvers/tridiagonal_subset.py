"""The wanted eigenpairs il..iu of the tridiagonal T, by one of two methods.

    mrrr   bisection (stebz.py) of the k wanted eigenvalues, each rank a share, then their
           eigenvectors by MRRR (stemr.py), each rank a group: work and memory O(n k / P),
           on the host
    dc     divide and conquer (tridiagonal.stevd: on the device in a GPU run, each rank its
           rows over P > 1 ranks): every eigenvalue, and only the k wanted eigenvectors formed
           by the top merge (its GEMM, about three quarters of the work of all, shrinks to
           k/n of itself; the merges below stay whole): memory O(n² / P)

Bisection and MRRR cost O(n) per eigenpair with a large constant, so divide and conquer
(mostly GEMMs) overtakes them at a modest k: on the CPU at 5–10% of n (about a tenth on one
rank, 4–7% over 2 and 4; measured, docs/PERFORMANCE.md), and in a GPU run, where MRRR stays on the host and divide and
conquer runs on the device, almost at once (one host MRRR eigenpair at n = 16384 costs a few
ms; the device solves all 16384 in about 0.3 s). 'auto' chooses by that; a range may name its
method (EigenRange.solver: eigh's driver='evr' / 'evx' / 'gvx' asks for MRRR).
"""
from .backend.arrays import is_numpy
from .stebz import replicated_tridiagonal, stebz
from .stemr import stemr, stemr_columns
from .tridiagonal import stevd, stevd_columns

CPU_DC_FRACTION = 0.05  # 'auto' on the CPU: divide and conquer for k > this share of n


def choose_solver(subset, k, n, on_gpu):
    """'mrrr' or 'dc' for k of n wanted eigenpairs, and why (a stage note)."""
    if subset.solver != "auto":
        return subset.solver, "asked for"
    if on_gpu:
        return "dc", "auto: a GPU run (divide and conquer on the device, MRRR on the host)"
    if k > CPU_DC_FRACTION * n:
        return "dc", f"auto: k = {k} > {CPU_DC_FRACTION:g} n on the CPU"
    return "mrrr", f"auto: k = {k} <= {CPU_DC_FRACTION:g} n on the CPU"


def tridiagonal_subset(d, e, subset, layout, coll, vectors, whole_columns=False,
                       tridiagonal="auto"):
    """(w, Y or None) of the ``subset`` of the tridiagonal (d, e): w on every rank (the real
    dtype of the problem, on its backend), Y an n × k DistMatrix in ``layout``'s block size,
    grid and dtype, or with ``whole_columns`` each rank's vectors whole (RankColumns: what
    two-stage's Q2 is applied to). ``tridiagonal``: how divide and conquer makes the
    eigenvectors over the ranks (tridiagonal.vectors_by)."""
    xp = coll.xp
    with coll.stage("stebz"):
        d_host, e_host = replicated_tridiagonal(d, e, coll)
        il, iu = subset.indices(d_host, e_host)
        n, k = d_host.shape[0], max(iu - il + 1, 0)
        solver, why = choose_solver(subset, k, n, not is_numpy(xp))
        coll.note("range", f"{subset} -> eigenpairs {il}..{iu} of {n}")
        coll.note("solver", f"{solver} [{why}]")
        if solver == "mrrr":
            w = stebz(d_host, e_host, il, iu, coll)
    if solver == "dc":
        with coll.stage("stedc" if vectors else "sterf"):
            if vectors and whole_columns:
                return stevd_columns(d, e, coll, (il, iu), tridiagonal)
            return stevd(d, e, coll, layout if vectors else None, (il, iu), tridiagonal)
    z = None
    if vectors:
        with coll.stage("stemr"):
            if whole_columns:
                z = stemr_columns(d_host, e_host, il, w, layout.grid, coll)
            else:
                z = stemr(d_host, e_host, il, w, layout.nb, layout.grid, coll, layout.dtype, xp)
    return xp.asarray(w.astype(d.dtype)), z

