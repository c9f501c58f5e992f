"""The distributed sygvd end to end against scipy.linalg.eigh: every itype × uplo × jobz ×
dtype on every grid shape, awkward block sizes, hard spectra and an ill-conditioned B; plus
solvers.eigh under MPI."""
import numpy as np
import pytest
import scipy.linalg
from mpi4py import MPI

import solvers
from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.sygvd import sygvd
from solvers.sygvd.check import THRESHOLD, eigen_ratios, eigenvalue_ratio
from solvers.testing import (SPECTRA, grid_shapes, poison_unreferenced, random_symmetric,
                             share_node_cores, spd_with_condition, spectrum,
                             symmetric_with_spectrum)

share_node_cores(MPI.COMM_WORLD)
SHAPES = grid_shapes(MPI.COMM_WORLD.Get_size())




def solve(grid, a, b, nb, itype, jobz, uplo, dtype=np.float64):
    """Run sygvd on poisoned copies (unreferenced triangle NaN); return (w, Z or None, coll)."""
    lower = uplo == "L"
    coll = Collectives(grid)
    da = DistMatrix.from_global(poison_unreferenced(a, lower).astype(dtype), grid, nb)
    db = DistMatrix.from_global(poison_unreferenced(b, lower).astype(dtype), grid, nb)
    w, z = sygvd(da, db, coll, itype=itype, jobz=jobz, uplo=uplo)
    stages = set(coll.stats)
    return w, (z.to_global(coll) if z is not None else None), stages


def assert_accurate(a, b, w, z, itype, dtype, seed, what=""):
    """dsgt01 ratios under ScaLAPACK's threshold, eigenvalues against scipy."""
    eps = float(np.finfo(dtype).eps)
    a64, b64 = a.astype(dtype).astype(np.float64), b.astype(dtype).astype(np.float64)
    ratios = eigenvalue_ratio(a64, b64, w.astype(np.float64), itype, eps)
    if z is not None:
        ratios.update(eigen_ratios(a64, b64, w.astype(np.float64), z.astype(np.float64), itype, eps))
    for name, value in ratios.items():
        assert value < THRESHOLD, f"seed={seed} {what}: {name} ratio {value:.1f} >= {THRESHOLD}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("jobz", ["V", "N"])
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("itype", [1, 2, 3])
def test_every_variant_matches_scipy(grid, seed, itype, uplo, jobz, dtype):
    rng = np.random.default_rng(seed)
    n, nb = 37, 8                       # n not a multiple of nb
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 100.0)
    w, z, stages = solve(grid, a, b, nb, itype, jobz, uplo, dtype)
    assert w.dtype == dtype and (z is None) == (jobz == "N")
    assert_accurate(a, b, w, z, itype, dtype, seed, f"itype={itype} uplo={uplo} jobz={jobz}")
    expected = {"validate", "potrf", "sygst", "sytrd", "tridiagonal"} | ({"ormtr", "trsm"} if jobz == "V" else set())
    assert stages == expected


def test_sytrd_makes_one_allreduce_per_column(grid, seed):
    """The per-column small Allreduce is the point of the design: n - 1 of them, plus one
    column-Allreduce per panel to assemble it (collectives over one rank are not made)."""
    rng = np.random.default_rng(seed)
    n, nb = 29, 4
    coll = Collectives(grid)
    sygvd(DistMatrix.from_global(random_symmetric(rng, n), grid, nb), None, coll, jobz="N")
    calls = coll.stats["sytrd"].by_op.get("allreduce", [0])[0]
    panels_mine = sum(1 for k in range(-(-n // nb)) if k % grid.npcol == grid.mycol)
    assert calls == (n - 1) * (grid.size > 1) + panels_mine * (grid.nprow > 1)


@pytest.mark.parametrize("n,nb", [(1, 4), (2, 1), (19, 32), (50, 50), (64, 16)])
def test_block_size_edge_cases(grid, seed, n, nb):
    rng = np.random.default_rng(seed)
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 10.0)
    w, z, _ = solve(grid, a, b, nb, 1, "V", "L")
    np.testing.assert_allclose(w, scipy.linalg.eigh(a, b, eigvals_only=True), rtol=1e-10, atol=1e-12,
                               err_msg=f"seed={seed}")
    assert_accurate(a, b, w, z, 1, np.float64, seed)


@pytest.mark.parametrize("itype", [1, 2, 3])
def test_larger_problem_many_panels(comm, seed, itype):
    """n = 193 over 13 panels of 16 on the default grid (the size the suite stays under)."""
    rng = np.random.default_rng(seed)
    n = 193
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 1e3)
    grid = ProcessGrid(comm)
    try:
        w, z, _ = solve(grid, a, b, 16, itype, "V", "U")
    finally:
        grid.free()
    assert_accurate(a, b, w, z, itype, np.float64, seed, f"n={n}")


@pytest.mark.parametrize("kind", SPECTRA)
@pytest.mark.parametrize("itype", [1, 3])
def test_hard_spectra(grid, seed, kind, itype):
    rng = np.random.default_rng(seed)
    n = 48
    a = symmetric_with_spectrum(rng, spectrum(rng, n, kind))
    b = spd_with_condition(rng, n, 10.0)
    w, z, _ = solve(grid, a, b, 6, itype, "V", "U")
    assert_accurate(a, b, w, z, itype, np.float64, seed, kind)


def test_standard_problem_recovers_known_spectrum(grid, seed):
    rng = np.random.default_rng(seed)
    lam = np.sort(spectrum(rng, 40, "clustered"))
    a = symmetric_with_spectrum(rng, lam)
    coll = Collectives(grid)
    w, z = sygvd(DistMatrix.from_global(a, grid, 7), None, coll)
    np.testing.assert_allclose(w, lam, atol=1e-13, err_msg=f"seed={seed}")
    z = z.to_global(coll)
    np.testing.assert_allclose(z.T @ z, np.eye(40), atol=1e-12, err_msg=f"seed={seed}")


@pytest.mark.parametrize("itype", [1, 2, 3])
def test_ill_conditioned_b(grid, seed, itype):
    """cond(B) = 1e7: the dsgt01 ratios grow with cond(B) for any algorithm (LAPACK's too), so
    they are held to scipy's own ratios on the same pencil; eigenvalues to their sensitivity."""
    rng = np.random.default_rng(seed)
    n = 40
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 1e7)
    w, z, _ = solve(grid, a, b, 5, itype, "V", "L")
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


def test_unreferenced_triangle_never_matters(grid, seed):
    """Bitwise the same results whatever the unreferenced triangle holds."""
    rng = np.random.default_rng(seed)
    n = 30
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 10.0)
    coll = Collectives(grid)
    results = []
    for junk in (np.nan, np.inf, 1e300, None):
        fill = (lambda x: poison_unreferenced(x, True, junk)) if junk is not None else (lambda x: np.tril(x))
        w, z = sygvd(DistMatrix.from_global(fill(a), grid, 4), DistMatrix.from_global(fill(b), grid, 4),
                     coll, itype=2)
        results.append((w, z.local))
    for w, z in results[1:]:
        assert np.array_equal(w, results[0][0]) and np.array_equal(z, results[0][1]), f"seed={seed}"


def test_eigh_under_mpi_matches_scipy(comm, seed):
    rng = np.random.default_rng(seed)
    a, b = random_symmetric(rng, 33), spd_with_condition(rng, 33, 50.0)
    w, z = solvers.eigh(poison_unreferenced(a, False), b, lower=False, type=2, comm=comm, nb=5)
    w_ref = scipy.linalg.eigh(a, b, type=2, eigvals_only=True)
    np.testing.assert_allclose(w, w_ref, rtol=1e-10, atol=1e-12, err_msg=f"seed={seed}")
    assert_accurate(a, b, w, z, 2, np.float64, seed)
    # Every rank got the same full answer.
    assert comm.allreduce(int(np.array_equal(comm.bcast(z, root=0), z)), op=MPI.MIN) == 1
