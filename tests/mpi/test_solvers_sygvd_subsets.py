"""Eigenpair subsets of the distributed sygvd / hegvd (#26) against scipy.linalg.eigh with the
same arguments: every dtype × itype × uplo × jobz × {index subset, value subset, empty range,
all-inclusive range, one eigenpair} × {MRRR, inverse iteration, divide and conquer} on the default grid (n not a
multiple of nb), every grid × range × method for float64; clusters of eigenvalues straddling the subset's edge and the cut between
ranks' groups of vectors; the per-rank memory rule of the tridiagonal eigenvectors; a factored
B reused for several A. The variant and grid tests run with both reductions to tridiagonal form
(two-stage: Q2 on each rank's own vectors before they move). Inputs carry junk where LAPACK
reads nothing, fresh each run. A subset by divide and conquer is the all-eigenpairs solve's
slice (eigenvalues bitwise, vectors to rounding)."""
import numpy as np
import pytest
import scipy.linalg
from mpi4py import MPI

from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid, numroc
from solvers.potrf import potrf
from solvers.stebz import stebz
from solvers.stemr import stemr
from solvers.subset import EigenRange
from solvers.sygvd import sygvd
from solvers.cli.check import THRESHOLD, eigen_ratios, eigenvalue_ratio
from solvers.problems import random_symmetric, spd_with_condition, symmetric_with_spectrum
from solver_testing import share_node_cores, with_junk

share_node_cores(MPI.COMM_WORLD)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
DTYPE_IDS = ["f32", "f64", "c64", "c128"]
RANGES = ["index", "value", "empty", "everything", "one"]
REDUCTIONS = ["1stage", "2stage"]
SOLVERS = ["mrrr", "invit", "dc"]


def pencil(rng, n, dtype, cond=100.0):
    hermitian = np.dtype(dtype).kind == "c"
    return random_symmetric(rng, n, hermitian), spd_with_condition(rng, n, cond, hermitian)


def wanted(kind, w_all, rng):
    """(EigenRange, scipy's keywords) of a range of ``kind`` for the exact spectrum w_all:
    value bounds half-way between eigenvalues, so that rounding cannot move one across."""
    n = w_all.shape[0]
    mid = (w_all[1:] + w_all[:-1]) / 2
    if kind == "index":
        il = int(rng.integers(1, n // 2))
        iu = int(rng.integers(il, n + 1))
        return EigenRange.by_index(il, iu), {"subset_by_index": [il - 1, iu - 1]}
    if kind == "one":
        i = int(rng.integers(1, n + 1))
        return EigenRange.by_index(i, i), {"subset_by_index": [i - 1, i - 1]}
    if kind == "value":
        lo, hi = sorted(rng.choice(n - 1, 2, replace=False))
        return EigenRange.by_value(mid[lo], mid[hi]), {"subset_by_value": [mid[lo], mid[hi]]}
    if kind == "empty":
        j = int(rng.integers(0, n - 1))
        gap = w_all[j + 1] - w_all[j]
        vl, vu = w_all[j] + gap / 3, w_all[j] + 2 * gap / 3
        return EigenRange.by_value(vl, vu), {"subset_by_value": [vl, vu]}
    span = w_all[-1] - w_all[0]
    vl, vu = w_all[0] - span, w_all[-1] + span
    return EigenRange.by_value(vl, vu), {"subset_by_value": [vl, vu]}


def solve(grid, a, b, nb, itype, jobz, uplo, dtype, subset, rng, b_factored=False, reduction="1stage"):
    coll = Collectives(grid)
    lower = uplo == "L"
    da = DistMatrix.from_global(with_junk(rng, a.astype(dtype), lower), grid, nb)
    db = None if b is None else DistMatrix.from_global(with_junk(rng, b.astype(dtype), lower), grid, nb)
    w, z = sygvd(da, db, coll, itype=itype, jobz=jobz, uplo=uplo, method="distributed",
                 subset=subset, b_factored=b_factored, reduction=reduction,
                 band=nb // 2 if nb % 2 == 0 else nb)
    return w, (None if z is None else z.to_global(coll)), coll


def assert_matches_scipy(a, b, w, z, itype, jobz, uplo, dtype, ref_keywords, seed, what):
    """Same shape and dtype as scipy's answer to the same arguments, eigenvalues alike, dsgt01 /
    zsgt01 ratios of the k pairs under 400 and ‖Zᴴ B Z − I‖/(n ε) too."""
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    a_w, b_w = a.astype(dtype), (None if b is None else b.astype(dtype))
    ref = scipy.linalg.eigh(a_w, b_w, lower=uplo == "L", type=itype, eigvals_only=jobz == "N",
                            **ref_keywords)
    w_ref, z_ref = (ref, None) if jobz == "N" else ref
    assert w.shape == w_ref.shape and w.dtype == w_ref.dtype, f"seed={seed} {what}: {w.shape} {w_ref.shape}"
    eps = float(np.finfo(dtype).eps)
    a64 = a_w.astype(wide)
    b64 = np.eye(a.shape[0], dtype=wide) if b is None else b_w.astype(wide)
    scale = np.abs(scipy.linalg.eigvalsh(a64, b64, type=itype)).max()
    tol = 1e-3 if eps > 1e-10 else 1e-9
    np.testing.assert_allclose(w, w_ref, rtol=tol, atol=tol * scale, err_msg=f"seed={seed} {what}")
    if jobz == "N":
        return
    assert z.shape == z_ref.shape and z.dtype == z_ref.dtype, f"seed={seed} {what}: {z.shape}"
    if z.shape[1]:
        ratios = eigen_ratios(a64, b64, w.astype(np.float64), z.astype(wide), itype, eps)
        for name, value in ratios.items():
            assert value < THRESHOLD, f"seed={seed} {what}: {name} ratio {value:.1f}"


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("jobz", ["V", "N"])
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("itype", [1, 2, 3])
def test_every_variant_every_range(comm, seed, itype, uplo, jobz, dtype, reduction):
    """dtype × itype × uplo × jobz × reduction here, × the five kinds of range in the loop (one
    grid)."""
    rng = np.random.default_rng(seed)
    n, nb = 23, 5
    a, b = pencil(rng, n, dtype)
    w_all = scipy.linalg.eigvalsh(a, b, type=itype)
    grid = ProcessGrid(comm)
    try:
        for kind, solver in [(kind, solver) for kind in RANGES for solver in SOLVERS]:
            subset, keywords = wanted(kind, w_all, rng)
            w, z, coll = solve(grid, a, b, nb, itype, jobz, uplo, dtype, subset.solved_by(solver), rng,
                               reduction=reduction)
            stages = {"mrrr": {"stebz", "stemr"} if jobz == "V" else {"stebz"},
                      "invit": {"stebz", "stein"} if jobz == "V" else {"stebz"},
                      "dc": {"stebz", "stedc" if jobz == "V" else "sterf"}}[solver]
            assert {"stebz", "stemr", "stein", "stedc", "sterf"} & set(coll.stats) == stages, (solver, set(coll.stats))
            assert coll.stats["stebz"].notes["solver"].startswith(f"{solver} [asked for]")
            assert_matches_scipy(a, b, w, z, itype, jobz, uplo, dtype, keywords, seed,
                                 f"{kind} {subset} {solver} {reduction}")
    finally:
        grid.free()


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kind", RANGES)
def test_every_grid_every_range(grid, seed, kind, reduction, solver):
    """1×P, P×1 (and 2×2 at 4 ranks) × each kind of range × reduction × each way of solving
    the subset, float64, standard and generalized."""
    rng = np.random.default_rng(seed)
    n, nb = 41, 6
    a, b = pencil(rng, n, np.float64)
    for bb, itype in ((b, 1), (None, 1), (b, 3)):
        w_all = scipy.linalg.eigvalsh(a, bb, type=itype)
        subset, keywords = wanted(kind, w_all, rng)
        w, z, _ = solve(grid, a, bb, nb, itype, "V", "U", np.float64, subset.solved_by(solver), rng,
                        reduction=reduction)
        assert_matches_scipy(a, bb, w, z, itype, "V", "U", np.float64, keywords, seed,
                             f"grid {grid.shape} {subset} b={'B' if bb is not None else None}")


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
def test_clusters_straddling_the_subset_edge_and_the_ranks_cuts(grid, seed, dtype, reduction, solver):
    """Eigenvalues 1e-12 apart across the subset's lower edge, and a second cluster over the
    even cuts between the ranks' groups of vectors: the vectors stay orthogonal (MRRR: one root
    for all ranks, and no cut inside one of its clusters; divide and conquer: the cluster's
    vectors from the merges, the wanted ones kept; inverse iteration: a cluster is one group,
    orthonormalized together, and divide and conquer takes over if a check fails)."""
    rng = np.random.default_rng(seed)
    n = 60
    lam = np.sort(rng.uniform(-1, 1, n))
    il, iu = 15, 46                               # k = 32: cuts at 8, 16, 24 at four ranks
    lam[il - 4:il + 3] = 0.1 + 1e-12 * np.arange(7)       # over the edge il
    lam[il + 3:il + 20] = 0.3 + 1e-12 * np.arange(17)     # over the cuts at 8 and 16
    lam = np.sort(lam)
    a = symmetric_with_spectrum(rng, lam, hermitian=np.dtype(dtype).kind == "c")
    subset = EigenRange.by_index(il, iu, solver)
    w, z, coll = solve(grid, a, None, 7, 1, "V", "L", dtype, subset, rng, reduction=reduction)
    np.testing.assert_allclose(w, lam[il - 1:iu], atol=1e-13, err_msg=f"seed={seed}")
    eps = float(np.finfo(dtype).eps)
    ortho = np.abs(z.conj().T @ z - np.eye(iu - il + 1)).sum(axis=0).max() / (n * eps)
    assert ortho < THRESHOLD, f"seed={seed}: orthogonality ratio {ortho:.1f}"
    ratios = eigen_ratios(a, np.eye(n), w, z, 1, eps)
    assert ratios["residual"] < THRESHOLD, f"seed={seed}: {ratios}"
    # Where the cluster went is the root's choice: its members can be well separated relative
    # to the root's shift (then a cut between them is one dlarrv itself makes), so only the
    # orthogonality above is promised, and that every vector was computed once.
    stage = {"mrrr": "stemr", "invit": "stein"}.get(solver)
    if stage:   # invit's stage runs also where a check fails and divide and conquer takes over
        assert grid.comm.allreduce(coll.stats[stage].notes["vectors_this_rank"]) == iu - il + 1


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128], ids=["f32", "f64", "c128"])
def test_divide_and_conquer_subset_is_the_full_solves(grid, seed, dtype, reduction):
    """A subset by divide and conquer (only the wanted eigenvectors formed in the top merge)
    against the all-eigenpairs solve of the same pencil: eigenvalues bitwise, eigenvectors the
    same columns to rounding (the back-transformations run on k columns instead of n)."""
    rng = np.random.default_rng(seed)
    n = 44
    a, b = pencil(rng, n, dtype)
    w_all, z_all, _ = solve(grid, a, b, 6, 1, "V", "L", dtype, None, rng, reduction=reduction)
    eps = float(np.finfo(dtype).eps)
    for il, iu in ((1, 5), (20, 21), (30, n)):
        subset = EigenRange.by_index(il, iu, "dc")
        w, z, coll = solve(grid, a, b, 6, 1, "V", "L", dtype, subset, rng, reduction=reduction)
        what = f"seed={seed} I:{il}:{iu}"
        assert w.tobytes() == w_all[il - 1:iu].tobytes(), what + ": eigenvalues differ"
        assert coll.stats["stedc"].notes["top_merge_vectors"] == f"{iu - il + 1} of {n} (the wanted ones)"
        diff = np.abs(z - z_all[:, il - 1:iu]).max() / np.abs(z_all).max()
        assert diff <= 64 * eps, what + f": |Z - Z_all| = {diff:.1e} max|Z|"


def test_vectors_per_rank_and_bitwise_eigenvalues(grid, seed):
    """The stage's own output: no rank holds more than its block-cyclic n × k share of Z, nor
    computes more than its group of vectors (n × ⌈k/P⌉ where the spectrum allows even cuts; the
    1-D Laplacian's are even in the middle of its spectrum), and every rank has the same bits of
    the eigenvalues."""
    n, il, iu, nb = 90, 31, 62, 5
    d, e = np.full(n, 2.0), np.full(n - 1, -1.0)
    e *= 1 + 1e-3 * np.random.default_rng(seed).standard_normal(n - 1)   # fresh each run
    coll = Collectives(grid)
    with coll.stage("stebz"):
        w = stebz(d, e, il, iu, coll)
    np.testing.assert_allclose(w, scipy.linalg.eigvalsh_tridiagonal(d, e)[il - 1:iu], atol=1e-13)
    every = grid.comm.allgather(w.tobytes())
    assert all(x == every[0] for x in every), f"seed={seed}: eigenvalues differ between ranks"
    with coll.stage("stemr"):
        z = stemr(d, e, il, w, nb, grid, coll, np.float64, np)
    k = iu - il + 1
    assert z.shape == (n, k)
    assert z.local.shape == (numroc(n, nb, grid.myrow, 0, grid.nprow),
                             numroc(k, nb, grid.mycol, 0, grid.npcol))
    notes = coll.stats["stemr"].notes
    assert notes["vectors_this_rank"] <= -(-k // grid.size) and notes["largest_group"] == -(-k // grid.size)
    assert grid.comm.allreduce(notes["vectors_this_rank"]) == k
    full = z.to_global(coll)
    tri = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(tri @ full, full * w, atol=1e-12, err_msg=f"seed={seed}")
    np.testing.assert_allclose(full.T @ full, np.eye(k), atol=1e-13, err_msg=f"seed={seed}")


def test_split_tridiagonal_vectors_land_in_ascending_columns(grid, seed):
    """A T that splits into blocks (zeros on its off-diagonal): MRRR stores each block's
    eigenpairs together, the ranks' slices follow that order, and every vector still reaches
    the column of its eigenvalue: Z's columns satisfy T z = w z for the ascending w."""
    rng = np.random.default_rng(seed)
    n, nb = 70, 6
    d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
    e[rng.choice(n - 1, size=9, replace=False)] = 0.0
    il, iu = int(rng.integers(1, 20)), int(rng.integers(40, n + 1))
    coll = Collectives(grid)
    w = stebz(d, e, il, iu, coll)
    z = stemr(d, e, il, w, nb, grid, coll, np.float64, np).to_global(coll)
    k = iu - il + 1
    tri = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(w, scipy.linalg.eigvalsh_tridiagonal(d, e)[il - 1:iu], atol=1e-12)
    np.testing.assert_allclose(tri @ z, z * w, atol=1e-11, err_msg=f"seed={seed}")
    np.testing.assert_allclose(z.T @ z, np.eye(k), atol=1e-12, err_msg=f"seed={seed}")


@pytest.mark.parametrize("wanted", [(7, 12), (1, 17), (13, 17)])
def test_where_mrrr_fails_inverse_iteration_takes_over(grid, wanted):
    """Glued Wilkinson matrices (W₅⁻ blocks joined by 1e-10) give eigenvalue pairs so close
    that dlarrv finds no representation for them (as dstemr fails on them, info 22): every
    rank then takes dstebz + dstein for its group, and the vectors are still right."""
    m, n = 2, 17
    d = np.abs(np.arange(n) % (2 * m + 1) - m).astype(float)
    e = np.ones(n - 1)
    e[np.arange(n - 1) % (2 * m + 1) == 2 * m] = 1e-10
    il, iu = wanted
    coll = Collectives(grid)
    with coll.stage("stebz"):
        w = stebz(d, e, il, iu, coll)
    with coll.stage("stemr"):
        z = stemr(d, e, il, w, 3, grid, coll, np.float64, np).to_global(coll)
    by = coll.stats["stemr"].notes["vectors_by"]
    if wanted == (7, 12):
        assert "dstein" in by, f"dlarrv no longer fails here ({by}): pick another matrix for this test"
    eps = np.finfo(np.float64).eps
    tri = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    ortho = np.abs(z.T @ z - np.eye(iu - il + 1)).sum(axis=0).max() / (n * eps)
    resid = np.abs(tri @ z - z * w).sum(axis=0).max() / (np.abs(tri).sum(axis=0).max() * n * eps)
    assert ortho < THRESHOLD and resid < THRESHOLD, (by, ortho, resid)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=["f64", "c64"])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_factored_b_reused_for_several_a(comm, seed, dtype, uplo, reduction):
    """One potrf, three A: each solve against the factor (b_factored=True: L in the lower
    triangle for uplo=L, Lᴴ in the upper one for U) has the bits of the solve against B itself,
    and makes no potrf stage."""
    rng = np.random.default_rng(seed)
    n, nb = 31, 4
    lower = uplo == "L"
    hermitian = np.dtype(dtype).kind == "c"
    b = spd_with_condition(rng, n, 50.0, hermitian).astype(dtype)
    grid = ProcessGrid(comm)
    try:
        coll = Collectives(grid)
        lfac = potrf(DistMatrix.from_global(np.tril(b), grid, nb), coll).to_global(coll)
        factor = lfac if lower else lfac.conj().T
        subset = EigenRange.by_index(3, 12)
        for _ in range(3):
            coll.reset()
            a = random_symmetric(rng, n, hermitian).astype(dtype)
            da = DistMatrix.from_global(with_junk(rng, a, lower), grid, nb)
            ours = sygvd(da, DistMatrix.from_global(with_junk(rng, factor, lower), grid, nb), coll,
                         uplo=uplo, method="distributed", subset=subset, b_factored=True,
                         reduction=reduction)
            stages = set(coll.stats)
            coll.reset()
            plain = sygvd(da, DistMatrix.from_global(with_junk(rng, b, lower), grid, nb), coll,
                          uplo=uplo, method="distributed", subset=subset, reduction=reduction)
            assert "potrf" not in stages and "potrf" in coll.stats
            assert np.array_equal(ours[0], plain[0]) and np.array_equal(ours[1].local, plain[1].local), \
                f"seed={seed}"
            assert_matches_scipy(a, b, ours[0], ours[1].to_global(coll), 1, "V", uplo, dtype,
                                 {"subset_by_index": [2, 11]}, seed, "factored")
    finally:
        grid.free()


@pytest.mark.parametrize("method", ["auto", "distributed", "single"])
def test_eigh_under_mpi_with_subsets_and_a_factor(comm, seed, method):
    """solvers.eigh on every rank with scipy's subset keywords, then against one factor of B;
    every rank gets the same full answer."""
    import solvers
    rng = np.random.default_rng(seed)
    n = 29
    a, b = pencil(rng, n, np.complex128)
    w_all = scipy.linalg.eigvalsh(a, b)
    keywords = {"subset_by_value": [(w_all[2] + w_all[3]) / 2, (w_all[20] + w_all[21]) / 2]}
    w, z = solvers.eigh(with_junk(rng, a, True), with_junk(rng, b, True), comm=comm, nb=4,
                        method=method, **keywords)
    assert_matches_scipy(a, b, w, z, 1, "V", "L", np.complex128, keywords, seed, method)
    assert comm.allreduce(int(np.array_equal(comm.bcast(z, root=0), z)), op=MPI.MIN) == 1
    if method == "single":
        return
    with solvers.cholesky(with_junk(rng, b, False), lower=False, comm=comm, nb=4) as f:
        for _ in range(2):
            a, _ = pencil(rng, n, np.complex128)
            w, z = solvers.eigh(with_junk(rng, a, False), f, lower=False, subset_by_index=[0, 6])
            assert_matches_scipy(a, b, w, z, 1, "V", "U", np.complex128,
                                 {"subset_by_index": [0, 6]}, seed, "factor")
