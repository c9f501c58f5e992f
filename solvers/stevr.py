"""stevr: the wanted eigenpairs il..iu (or those in (vl, vu]) of the symmetric tridiagonal T,
as LAPACK's dstevr and dstevx find them, by one of three methods.

    mrrr   bisection (stebz.py) of the k wanted eigenvalues, each rank a share, then their
           eigenvectors by MRRR (stemr.py), each rank a group: work and memory O(n k / P),
           on the host
    invit  multisection and inverse iteration (stein.py: dstebz and dstein's steps in the
           solver's kernels, each rank a share of the eigenvalues and a group of the vectors,
           orthonormalized together and checked): on the GPU in a GPU run, k eigenpairs side
           by side in about the time of one (on the host, LAPACK's dstebz and the kernels'
           host build of the iteration); divide and conquer instead where a check fails
    dc     divide and conquer (stevd.py: on the device in a GPU run, each rank its
           rows over P > 1 ranks): every eigenvalue, and only the k wanted eigenvectors formed
           by the top merge (its GEMM, about three quarters of the work of all, shrinks to
           k/n of itself; the merges below stay whole): memory O(n² / P)

Bisection and MRRR cost O(n) per eigenpair with a large constant, so divide and conquer
(mostly GEMMs) overtakes them at a modest k: on the CPU at 5–10% of n (about a tenth on one
rank, 4–7% over 2 and 4; measured, docs/PERFORMANCE.md). In a GPU run MRRR stays on the host
(one eigenpair at n = 16384 costs a few ms there), so 'auto' takes invit for k up to
GPU_INVIT_FRACTION of n and divide and conquer above. A range may name its method
(EigenRange.solver: eigh's driver='evr' asks for MRRR, 'evx' / 'gvx' for invit, as LAPACK's
dsyevr and dsyevx / dsygvx run them).
"""
from .backend.arrays import is_numpy
from .distributed.columns import columns_to_block_cyclic
from .stebz import replicated_tridiagonal, stebz
from .stein import bisector
from .stein import vectors as stein_vectors
from .stemr import stemr, stemr_columns
from .stevd import stevd, stevd_columns

CPU_DC_FRACTION = 0.05  # 'auto' on the CPU: divide and conquer for k > this share of n
# 'auto' in a GPU run: invit for k <= this share of n. Measured at n = 8192 on an H100 (the stage
# alone, docs/PERFORMANCE.md): invit 0.030 / 0.036 / 0.048 / 0.083 s for the lowest 2 / 10 / 25 /
# 50 % against divide and conquer's 0.086 / 0.090 / 0.096 / 0.101 s. Not raised to a half: its
# orthonormalization grows as n k², and at n = 16384 a half takes three batches of inverse
# iteration (BATCH_BYTES), not measured.
GPU_INVIT_FRACTION = 0.25


def choose_solver(subset, k, n, on_gpu):
    """'mrrr' or 'dc' for k of n wanted eigenpairs, and why (a stage note)."""
    if subset.solver != "auto":
        return subset.solver, "asked for"
    if on_gpu:
        if k <= GPU_INVIT_FRACTION * n:
            return "invit", f"auto: a GPU run, k = {k} <= {GPU_INVIT_FRACTION:g} n"
        return "dc", f"auto: a GPU run, k = {k} > {GPU_INVIT_FRACTION:g} n (MRRR would run on the host)"
    if k > CPU_DC_FRACTION * n:
        return "dc", f"auto: k = {k} > {CPU_DC_FRACTION:g} n on the CPU"
    return "mrrr", f"auto: k = {k} <= {CPU_DC_FRACTION:g} n on the CPU"


def stevr(d, e, subset, layout, coll, vectors, whole_columns=False, tridiagonal="auto"):
    """(w, Y or None) of the ``subset`` of the tridiagonal (d, e): w on every rank (the real
    dtype of the problem, on its backend), Y an n × k DistMatrix in ``layout``'s block size,
    grid and dtype, or with ``whole_columns`` each rank's vectors whole (RankColumns: what
    two-stage's Q2 is applied to). ``tridiagonal``: how divide and conquer makes the
    eigenvectors over the ranks (stevd.vectors_by)."""
    xp = coll.xp
    with coll.stage("stebz"):
        d_host, e_host = replicated_tridiagonal(d, e, coll)
        il, iu = subset.indices(d_host, e_host)
        n, k = d_host.shape[0], max(iu - il + 1, 0)
        solver, why = choose_solver(subset, k, n, not is_numpy(xp))
        coll.note("range", f"{subset} -> eigenpairs {il}..{iu} of {n}")
        coll.note("solver", f"{solver} [{why}]")
        if solver in ("mrrr", "invit"):
            w = stebz(d_host, e_host, il, iu, coll, bisector(xp) if solver == "invit" else None)
    if solver == "invit" and vectors:
        with coll.stage("stein"):
            columns, why = stein_vectors(d_host, e_host, il, w, coll)
            if columns is None:
                coll.note("solver", f"dc [invit's check failed: {why}]")
        if columns is not None:
            if whole_columns:
                return xp.asarray(w.astype(d.dtype)), columns
            return xp.asarray(w.astype(d.dtype)), columns_to_block_cyclic(
                *columns, d_host.shape[0], w.shape[0], layout.nb, layout.grid, coll, layout.dtype, xp)
        solver = "dc"
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

