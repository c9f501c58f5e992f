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

Which one 'auto' takes for k of n wanted eigenpairs is the plan's rule (plan.choose_subset_solver:
bisection and MRRR cost O(n) per eigenpair with a large constant, so divide and conquer, mostly
GEMMs, overtakes them at a modest k; in a GPU run MRRR would stay on the host, so invit takes the
smaller subsets there), evaluated here, where k is known: a value range's count comes from the
tridiagonal itself. A range may name its method (EigenRange.solver: eigh's driver='evr' asks for
MRRR, 'evx' / 'gvx' for invit, as LAPACK's dsyevr and dsyevx / dsygvx run them).
"""
from .distributed.columns import columns_to_block_cyclic
from .plan import resolve
from .stebz import replicated_tridiagonal, stebz
from .stein import bisector
from .stein import vectors as stein_vectors
from .stemr import stemr, stemr_columns
from .stevd import stevd, stevd_columns

def stevr(d, e, subset, layout, coll, vectors, whole_columns=False, plan=None):
    """(w, Y or None) of the ``subset`` of the tridiagonal (d, e): w on every rank (the real
    dtype of the problem, on its backend), Y an n × k DistMatrix in ``layout``'s block size,
    grid and dtype, or with ``whole_columns`` each rank's vectors whole (RankColumns: what
    two-stage's Q2 is applied to). ``plan``: the solve's SolverPlan (default: plan.resolve's
    for d's order on coll's grid)."""
    xp = coll.xp
    plan = plan or resolve(xp, d.shape[0], coll.grid.size)
    with coll.stage("stebz"):
        d_host, e_host = replicated_tridiagonal(d, e, coll)
        il, iu = subset.indices(d_host, e_host)
        n, k = d_host.shape[0], max(iu - il + 1, 0)
        solver, why = plan.subset_solver(subset, k)
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
                return stevd_columns(d, e, coll, (il, iu), plan)
            return stevd(d, e, coll, layout if vectors else None, (il, iu), plan)
    z = None
    if vectors:
        with coll.stage("stemr"):
            if whole_columns:
                z = stemr_columns(d_host, e_host, il, w, layout.grid, coll)
            else:
                z = stemr(d_host, e_host, il, w, layout.nb, layout.grid, coll, layout.dtype, xp)
    return xp.asarray(w.astype(d.dtype)), z

