"""The distributed sygvd / hegvd end to end against scipy.linalg.eigh: every dtype (float32,
float64, complex64, complex128) × itype × uplo × jobz on the default grid, every grid shape ×
dtype, the standard problem (syevd / heevd), awkward block sizes, hard spectra and an
ill-conditioned B, each by the distributed stages with both reductions to tridiagonal form
(one-stage sytrd; two-stage sy2sb + sb2st, bandwidth half the block size where nb is even, so
panels of b columns share a block column); the single-rank method for every dtype × itype ×
uplo; plus solvers.eigh under MPI. Inputs carry random junk where LAPACK reads nothing
(the other triangle, imaginary parts of the diagonals), fresh each run."""
import numpy as np
import pytest
import scipy.linalg
from mpi4py import MPI

import solvers
from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.sygvd import sygvd
from solvers.cli.check import THRESHOLD, eigen_ratios, eigenvalue_ratio
from solvers.problems import (SPECTRA, random_symmetric, spd_with_condition, spectrum,
                              symmetric_with_spectrum)
from solver_testing import grid_shapes, poison_unreferenced, share_node_cores, with_junk

share_node_cores(MPI.COMM_WORLD)
SHAPES = grid_shapes(MPI.COMM_WORLD.Get_size())
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
DTYPE_IDS = ["f32", "f64", "c64", "c128"]
REDUCTIONS = ["1stage", "2stage"]


def band_for_test(nb):
    """Two-stage's bandwidth in these tests: nb/2 (two panels per block column) or nb itself."""
    return nb // 2 if nb % 2 == 0 else nb


def pencil(rng, n, dtype, cond=100.0):
    """(A, B) of float64 / complex128 as dtype asks: symmetric / Hermitian, B positive definite."""
    hermitian = np.dtype(dtype).kind == "c"
    return random_symmetric(rng, n, hermitian), spd_with_condition(rng, n, cond, hermitian)


def solve(grid, a, b, nb, itype, jobz, uplo, dtype=np.float64, method="distributed", rng=None,
          reduction="1stage"):
    """Run sygvd on copies carrying junk where nothing may be read (random junk with ``rng``,
    else NaN in the other triangle); return (w, Z or None, stage names). b may be None."""
    lower = uplo == "L"
    coll = Collectives(grid)

    def spoiled(x):
        x = x.astype(dtype)
        return with_junk(rng, x, lower) if rng is not None else poison_unreferenced(x, lower)

    da = DistMatrix.from_global(spoiled(a), grid, nb)
    db = DistMatrix.from_global(spoiled(b), grid, nb) if b is not None else None
    w, z = sygvd(da, db, coll, itype=itype, jobz=jobz, uplo=uplo, method=method,
                 reduction=reduction, band=band_for_test(nb))
    stages = set(coll.stats)
    return w, (z.to_global(coll) if z is not None else None), stages


def assert_accurate(a, b, w, z, itype, dtype, seed, what=""):
    """dsgt01 / zsgt01 ratios under ScaLAPACK's threshold, eigenvalues against scipy (b None:
    the standard problem, B = I)."""
    eps = float(np.finfo(dtype).eps)
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    a64 = a.astype(dtype).astype(wide)
    b64 = np.eye(a.shape[0], dtype=wide) if b is None else b.astype(dtype).astype(wide)
    ratios = eigenvalue_ratio(a64, b64, w.astype(np.float64), itype, eps)
    if z is not None:
        ratios.update(eigen_ratios(a64, b64, w.astype(np.float64), z.astype(wide), itype, eps))
    for name, value in ratios.items():
        assert value < THRESHOLD, f"seed={seed} {what}: {name} ratio {value:.1f} >= {THRESHOLD}"


def expected_stages(dtype, jobz, generalized=True, reduction="1stage"):
    """LAPACK's names of the distributed stages, by dtype (he/un for complex)."""
    c = np.dtype(dtype).kind == "c"
    names = {"validate", "stedc" if jobz == "V" else "sterf"}
    if reduction == "1stage":
        names |= {"hetrd" if c else "sytrd"} | ({"unmtr" if c else "ormtr"} if jobz == "V" else set())
    else:
        names |= {"he2hb", "hb2st"} if c else {"sy2sb", "sb2st"}
        if jobz == "V":
            names |= {"unmtr_hb2st", "unmtr_he2hb"} if c else {"ormtr_sb2st", "ormtr_sy2sb"}
    if generalized:
        names |= {"potrf", "hegst" if c else "sygst"}
    if jobz == "V" and generalized:
        names |= {"trsm"}
    return names


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("jobz", ["V", "N"])
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("itype", [1, 2, 3])
def test_every_variant_matches_scipy(comm, seed, itype, uplo, jobz, dtype, reduction):
    """Every dtype × itype × uplo × jobz × reduction, on the default grid (the grids: the test
    below)."""
    rng = np.random.default_rng(seed)
    n, nb = 37, 8                       # n not a multiple of nb (nor of the bandwidth 4)
    a, b = pencil(rng, n, dtype)
    grid = ProcessGrid(comm)
    try:
        w, z, stages = solve(grid, a, b, nb, itype, jobz, uplo, dtype, rng=rng, reduction=reduction)
    finally:
        grid.free()
    assert w.dtype == np.zeros(1, dtype).real.dtype and (z is None) == (jobz == "N")
    assert z is None or z.dtype == dtype
    assert_accurate(a, b, w, z, itype, dtype, seed, f"itype={itype} uplo={uplo} jobz={jobz} {reduction}")
    assert stages == expected_stages(dtype, jobz, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_every_grid_every_dtype(grid, seed, dtype, reduction):
    """1×P, P×1 (and 2×2 at 4 ranks) for each dtype and reduction, itype 1, with vectors."""
    rng = np.random.default_rng(seed)
    a, b = pencil(rng, 29, dtype)
    w, z, _ = solve(grid, a, b, 6, 1, "V", "U", dtype, rng=rng, reduction=reduction)
    assert_accurate(a, b, w, z, 1, dtype, seed, f"grid {grid.shape} {reduction}")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_standard_problem_is_syevd(comm, seed, dtype, uplo, reduction):
    """b=None: syevd / heevd's own stages, no potrf, sygst or trsm (odd nb: bandwidth nb)."""
    rng = np.random.default_rng(seed)
    a, _ = pencil(rng, 31, dtype)
    grid = ProcessGrid(comm)
    try:
        for jobz in ("V", "N"):
            w, z, stages = solve(grid, a, None, 7, 1, jobz, uplo, dtype, rng=rng, reduction=reduction)
            assert stages == expected_stages(dtype, jobz, generalized=False, reduction=reduction)
            assert_accurate(a, None, w, z, 1, dtype, seed, f"standard jobz={jobz}")
    finally:
        grid.free()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("itype", [1, 2, 3])
def test_single_method_matches_scipy(comm, seed, itype, uplo, dtype):
    """The whole problem by one LAPACK call on rank 0, scattered back: one stage named for it."""
    rng = np.random.default_rng(seed)
    a, b = pencil(rng, 26, dtype)
    grid = ProcessGrid(comm)
    try:
        w, z, stages = solve(grid, a, b, 5, itype, "V", uplo, dtype, method="single", rng=rng)
        w_n, _, _ = solve(grid, a, None, 5, 1, "N", uplo, dtype, method="single", rng=rng)
    finally:
        grid.free()
    name = "hegvd" if np.dtype(dtype).kind == "c" else "sygvd"
    assert stages == {"validate", name}
    assert w.dtype == np.zeros(1, dtype).real.dtype and z.dtype == dtype
    assert_accurate(a, b, w, z, itype, dtype, seed, f"single itype={itype}")
    assert_accurate(a, None, w_n, None, 1, dtype, seed, "single standard")


def test_sytrd_makes_one_allreduce_per_column(grid, seed):
    """The per-column small Allreduce is the point of the design: n - 1 of them, plus one
    column-Allreduce per panel to assemble it (collectives over one rank are not made)."""
    rng = np.random.default_rng(seed)
    n, nb = 29, 4
    coll = Collectives(grid)
    sygvd(DistMatrix.from_global(random_symmetric(rng, n), grid, nb), None, coll, jobz="N",
          method="distributed")
    calls = coll.stats["sytrd"].by_op.get("allreduce", [0])[0]
    panels_mine = sum(1 for k in range(-(-n // nb)) if k % grid.npcol == grid.mycol)
    assert calls == (n - 1) * (grid.size > 1) + panels_mine * (grid.nprow > 1)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("n,nb", [(1, 4), (2, 1), (19, 32), (50, 50), (64, 16)])
def test_block_size_edge_cases(grid, seed, n, nb, reduction):
    """(Two-stage: n < b, b = 1, a matrix that is its own band, b dividing n.)"""
    rng = np.random.default_rng(seed)
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 10.0)
    w, z, _ = solve(grid, a, b, nb, 1, "V", "L", reduction=reduction)
    np.testing.assert_allclose(w, scipy.linalg.eigh(a, b, eigvals_only=True), rtol=1e-10, atol=1e-12,
                               err_msg=f"seed={seed}")
    assert_accurate(a, b, w, z, 1, np.float64, seed)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("itype", [1, 2, 3])
def test_larger_problem_many_panels(comm, seed, itype, reduction):
    """n = 193 over 13 panels of 16 (two-stage: 24 of 8) on the default grid (the size the
    suite stays under)."""
    rng = np.random.default_rng(seed)
    n = 193
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 1e3)
    grid = ProcessGrid(comm)
    try:
        w, z, _ = solve(grid, a, b, 16, itype, "V", "U", reduction=reduction)
    finally:
        grid.free()
    assert_accurate(a, b, w, z, itype, np.float64, seed, f"n={n}")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("kind", SPECTRA)
@pytest.mark.parametrize("itype", [1, 3])
def test_hard_spectra(grid, seed, kind, itype, reduction):
    rng = np.random.default_rng(seed)
    n = 48
    a = symmetric_with_spectrum(rng, spectrum(rng, n, kind))
    b = spd_with_condition(rng, n, 10.0)
    w, z, _ = solve(grid, a, b, 6, itype, "V", "U", reduction=reduction)
    assert_accurate(a, b, w, z, itype, np.float64, seed, kind)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_standard_problem_recovers_known_spectrum(grid, seed, reduction):
    rng = np.random.default_rng(seed)
    lam = np.sort(spectrum(rng, 40, "clustered"))
    a = symmetric_with_spectrum(rng, lam)
    coll = Collectives(grid)
    w, z = sygvd(DistMatrix.from_global(a, grid, 7), None, coll, method="distributed",
                 reduction=reduction)
    np.testing.assert_allclose(w, lam, atol=1e-13, err_msg=f"seed={seed}")
    z = z.to_global(coll)
    np.testing.assert_allclose(z.T @ z, np.eye(40), atol=1e-12, err_msg=f"seed={seed}")


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("itype", [1, 2, 3])
def test_ill_conditioned_b(grid, seed, itype, reduction):
    """cond(B) = 1e7: the dsgt01 ratios grow with cond(B) for any algorithm (LAPACK's too), so
    they are held to scipy's own ratios on the same pencil; eigenvalues to their sensitivity."""
    rng = np.random.default_rng(seed)
    n = 40
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 1e7)
    w, z, _ = solve(grid, a, b, 5, itype, "V", "L", reduction=reduction)
    eps = float(np.finfo(float).eps)
    assert eigenvalue_ratio(a, b, w, itype, eps)["eigenvalues"] < THRESHOLD, f"seed={seed}"
    ours = eigen_ratios(a, b, w, z, itype, eps)
    w_ref, z_ref = scipy.linalg.eigh(a, b, type=itype)
    ref = eigen_ratios(a, b, w_ref, z_ref, itype, eps)
    # Zᵀ B⁻¹ Z (itype 3) is checked with the same LAPACK Cholesky scipy used, which flatters
    # scipy's own result by orders of magnitude: only the residual is compared there.
    names = ("residual", "orthogonality") if itype != 3 else ("residual",)
    for name in names:
        assert ours[name] < max(THRESHOLD, 10 * ref[name]), f"seed={seed}: ours {ours} scipy {ref}"


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_unreferenced_triangle_never_matters(grid, seed, reduction):
    """Bitwise the same results whatever the unreferenced triangle holds."""
    rng = np.random.default_rng(seed)
    n = 30
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 10.0)
    coll = Collectives(grid)
    results = []
    for junk in (np.nan, np.inf, 1e300, None):
        fill = (lambda x: poison_unreferenced(x, True, junk)) if junk is not None else (lambda x: np.tril(x))
        w, z = sygvd(DistMatrix.from_global(fill(a), grid, 4), DistMatrix.from_global(fill(b), grid, 4),
                     coll, itype=2, method="distributed", reduction=reduction, band=2)
        results.append((w, z.local))
    for w, z in results[1:]:
        assert np.array_equal(w, results[0][0]) and np.array_equal(z, results[0][1]), f"seed={seed}"


@pytest.mark.parametrize("method,reduction", [("auto", "auto"), ("distributed", "1stage"),
                                              ("distributed", "2stage"), ("single", "auto"),
                                              ("replicated", "auto")])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
def test_eigh_under_mpi_matches_scipy(comm, seed, dtype, method, reduction):
    rng = np.random.default_rng(seed)
    a, b = pencil(rng, 33, dtype, 50.0)
    w, z = solvers.eigh(with_junk(rng, a, False), with_junk(rng, b, False), lower=False, type=2,
                        comm=comm, nb=5, method=method, reduction=reduction)
    w_ref = scipy.linalg.eigh(a, b, type=2, eigvals_only=True)
    np.testing.assert_allclose(w, w_ref, rtol=1e-10, atol=1e-12, err_msg=f"seed={seed}")
    assert_accurate(a, b, w, z, 2, dtype, seed)
    # Every rank got the same full answer.
    assert comm.allreduce(int(np.array_equal(comm.bcast(z, root=0), z)), op=MPI.MIN) == 1
