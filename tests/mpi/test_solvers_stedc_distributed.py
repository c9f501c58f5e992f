"""All eigenpairs of the tridiagonal with each rank computing only its own rows of the
eigenvector matrix (stedc_distributed.py, #26): against LAPACK on the shapes that stress
divide and conquer, eigenvalues bitwise the same on every rank, memory per rank O(n²/P)
(traced allocations: the replicated matrix alone is n² per rank), the replicated path still
there on request (tridiagonal='replicated', from the drivers too), and a selection (only the
wanted eigenvectors formed by the top merge) equal to the all-eigenpairs solve's columns."""
import tracemalloc

import numpy as np
import pytest
import scipy.linalg
from mpi4py import MPI

from solvers.backend import Collectives
from solvers.distributed import DistMatrix
from solvers.errors import InputError
from solver_testing import (hard_tridiagonals, selections_straddling, share_node_cores,
                            straddled_tridiagonal)
from solvers.plan import resolve
from solvers.stevd import stevd

share_node_cores(MPI.COMM_WORLD)
EPS = np.finfo(np.float64).eps


def _solve(grid, d, e, nb, dtype=np.float64, layout=None, select=None, tridiagonal="auto"):
    coll = Collectives(grid)
    k = d.shape[0] if select is None else select[1] - select[0] + 1
    layout = layout or DistMatrix.empty(d.shape[0], k, nb, grid, dtype)
    with coll.stage("stedc"):
        w, z = stevd(d.copy(), e.copy(), coll, layout, select,
                     resolve(np, d.shape[0], grid.size, tridiagonal=tridiagonal))
    return w, z, coll


def test_rows_by_rank_against_lapack(grid, seed):
    for name, d, e in hard_tridiagonals(np.random.default_rng(seed), 121):
        n = d.shape[0]
        w, z, coll = _solve(grid, d, e, 7)
        what = f"seed={seed} {name}"
        assert z.local.dtype == np.float64 and z.shape == (n, n)
        if grid.size > 1:
            assert coll.stats["stedc"].notes["vectors_by"].startswith("divide and conquer by rows"), what
        zg = z.to_global(coll)
        t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
        norm = np.abs(t).max()
        assert np.all(np.diff(w) >= 0), what + ": not ascending"
        assert np.abs(t @ zg - zg * w).max() <= 10 * n * EPS * norm, what + ": residual"
        assert np.abs(zg.T @ zg - np.eye(n)).max() <= 10 * n * EPS, what + ": orthogonality"
        want = scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True)
        np.testing.assert_allclose(w, want, rtol=0, atol=10 * n * EPS * norm, err_msg=what)
        every = grid.comm.allgather(w.tobytes())
        assert all(x == every[0] for x in every), what + ": eigenvalues differ between ranks"


def test_complex_layout_takes_the_real_vectors(grid, seed):
    rng = np.random.default_rng(seed)
    d, e = rng.standard_normal(50), rng.standard_normal(49)
    w, z, coll = _solve(grid, d, e, 6, np.complex128)
    zg = z.to_global(coll)
    assert zg.dtype == np.complex128 and not zg.imag.any()
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    assert np.abs(t @ zg.real - zg.real * w).max() <= 500 * EPS * np.abs(t).max(), f"seed={seed}"


def test_memory_per_rank_is_a_share_of_n_squared(grid, seed):
    """Peak traced allocations of the stage (eigenvectors, merges, the Alltoallv into the
    block-cyclic layout) stay under 3.5 n²/P doubles per rank; a replicated eigenvector matrix
    is 2 n² (dstevd's Z and workspace)."""
    if grid.size == 1:
        pytest.skip("one rank holds every row: nothing to share")
    n = 600
    rng = np.random.default_rng(seed)
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    layout = DistMatrix.empty(n, n, 16, grid, np.float64)    # the caller's, not the stage's
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        w, z, _ = _solve(grid, d, e, 16, layout=layout)
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    worst = grid.comm.allreduce(peak, op=MPI.MAX) / (8 * n * n)
    assert worst <= 3.5 / grid.size, f"seed={seed}: peak {worst:.2f} n² doubles on some rank"


def test_replicated_on_request_agrees(grid, seed):
    """tridiagonal='replicated': every rank solves the whole tridiagonal problem, as before the
    rows per rank; a bad name is refused."""
    rng = np.random.default_rng(seed)
    d, e = rng.standard_normal(90), rng.standard_normal(89)
    w_rows, z_rows, coll = _solve(grid, d, e, 8)
    w, z, coll = _solve(grid, d, e, 8, tridiagonal="replicated")
    assert coll.stats["stedc"].notes["vectors_by"] == "divide and conquer, whole on every rank"
    assert coll.stats["stedc"].notes["tridiagonal"].startswith("replicated [")
    np.testing.assert_allclose(w, w_rows, rtol=0, atol=1e-13 * np.abs(w).max(), err_msg=f"seed={seed}")
    with pytest.raises(InputError, match="tridiagonal must be one of auto, rows, replicated"):
        _solve(grid, d, e, 8, tridiagonal="bogus")


@pytest.mark.parametrize("standard", [False, True], ids=["sygvd", "syevd"])
def test_the_drivers_pass_the_option_down(comm, seed, standard):
    """sygvd(..., tridiagonal=) (and syevd through it, b=None) reaches the stage: 'replicated'
    solves the whole problem on every rank, 'rows' by rows over P > 1 ranks; a bad name is
    refused on every rank before any work."""
    from solvers.distributed import ProcessGrid
    from solvers.sygvd import sygvd
    from solvers.problems import random_symmetric, spd_with_condition
    rng = np.random.default_rng(seed)
    grid = ProcessGrid(comm)
    try:
        a = DistMatrix.from_global(random_symmetric(rng, 30), grid, 8)
        b = None if standard else DistMatrix.from_global(spd_with_condition(rng, 30, 10.0), grid, 8)
        results = {}
        for choice in ("rows", "replicated"):
            coll = Collectives(grid)
            results[choice] = sygvd(a, b, coll, method="distributed", tridiagonal=choice)[0]
            whole = coll.stats["stedc"].notes["vectors_by"] == "divide and conquer, whole on every rank"
            assert whole == (choice == "replicated" or grid.size == 1), f"seed={seed} {choice}"
        np.testing.assert_allclose(results["rows"], results["replicated"], rtol=0, atol=1e-12,
                                   err_msg=f"seed={seed}")
        coll = Collectives(grid)
        with pytest.raises(InputError, match="tridiagonal must be one of auto, rows, replicated"):
            sygvd(a, b, coll, method="distributed", tridiagonal="columns")
        assert not set(coll.stats) & {"potrf", "sytrd"}      # refused before any work
    finally:
        grid.free()


@pytest.mark.parametrize("tridiagonal", ["rows", "replicated"])
@pytest.mark.parametrize("real", [np.float32, np.float64])
def test_a_selection_is_the_whole_solves_columns(grid, seed, real, tridiagonal):
    """stevd(select=(il, iu)): the top merge forms only the wanted eigenvectors (each rank its
    rows of them by rows, the whole of them replicated): eigenvalues bitwise those of the
    all-eigenpairs solve, Z its columns to rounding, for both real types the tridiagonal
    solve sees (float32 from s/c problems), with clusters and deflated eigenpairs across the
    subset's edges."""
    rng = np.random.default_rng(seed)
    d, e = straddled_tridiagonal(rng, 25)
    cases = [("straddled", d, e)] + [c for c in hard_tridiagonals(rng, 100) if c[0] in (
        "random", "exact copies (equal poles)", "copies weakly coupled", "constant, tiny coupling")]
    # Vectors formed by GEMMs of other shapes: a few float64 roundings, then rounded to ``real``.
    tolerance = 16 * EPS + np.finfo(real).eps
    for name, d, e in cases:
        d, e = d.astype(real), e.astype(real)
        n = d.shape[0]
        w, z, coll = _solve(grid, d, e, 7, real, tridiagonal=tridiagonal)
        zg = z.to_global(coll)
        for first, last in selections_straddling(w.astype(np.float64)):
            what = f"seed={seed} {name} {np.dtype(real).name} {tridiagonal} select=({first}, {last})"
            ws, zs, stage = _solve(grid, d, e, 7, real, select=(first + 1, last), tridiagonal=tridiagonal)
            assert ws.dtype == real and zs.shape == (n, last - first) and zs.local.dtype == real, what
            assert ws.tobytes() == w[first:last].tobytes(), what + ": eigenvalues differ"
            assert stage.stats["stedc"].notes["top_merge_vectors"] == f"{last - first} of {n} (the wanted ones)"
            diff = np.abs(zs.to_global(coll) - zg[:, first:last]).max()
            assert diff <= tolerance, what + f": |Z - Z_all| = {diff:.1e}"


def test_whole_columns_per_rank_from_the_rows(grid, seed):
    """stevd_columns (what two-stage's Q2 takes): over P > 1 ranks each rank's equal share of
    the eigenvector columns comes whole from the rows per rank by one Alltoallv; the columns
    are T's eigenvectors (against the replicated path's up to sign), for all and for a
    selection."""
    from solvers.stevd import stevd_columns
    rng = np.random.default_rng(seed)
    n = 70
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    for select in (None, (5, 31)):
        w, cols = stevd_columns(d.copy(), e.copy(), Collectives(grid), select)
        w_rep, cols_rep = stevd_columns(d.copy(), e.copy(), Collectives(grid), select,
                                        resolve(np, n, grid.size, tridiagonal="replicated"))
        k = w.shape[0]
        assert k == (n if select is None else 27) and np.array_equal(cols.bounds, cols_rep.bounds)
        lo, hi = cols.bounds[grid.rank], cols.bounds[grid.rank + 1]
        assert cols.mine.shape == (n, hi - lo) and np.array_equal(cols.place, np.arange(k))
        np.testing.assert_allclose(w, w_rep, rtol=0, atol=1e-13 * np.abs(t).max(), err_msg=f"seed={seed}")
        mine = cols.mine
        assert np.abs(t @ mine - mine * w[lo:hi]).max() <= 10 * n * EPS * np.abs(t).max(), f"seed={seed}"
        # Two divide and conquer trees: an eigenvector may differ by ε‖T‖/gap towards its
        # neighbours' (the closest pair of a random T of order 70 can be 2e-4 apart).
        norm = np.abs(t).max()
        gaps = np.abs(w[lo:hi, None] - w[None, lo:hi]) + np.eye(hi - lo)
        mixing = np.abs(np.abs(mine.T @ cols_rep.mine) - np.eye(hi - lo)) * gaps
        assert mixing.max(initial=0) <= 10 * n * EPS * norm, f"seed={seed} {select}"
