"""Each LAPACK stage on its own, distributed, against numpy/scipy, real and complex: potrf,
trsm/trmm (op = L or Lᴴ), sygst/hegst, sytrd/hetrd + stevd + ormtr/unmtr."""
import numpy as np
import pytest
import scipy.linalg
from mpi4py import MPI

from solvers.backend import Collectives
from solvers.distributed import DistMatrix
from solvers.distributed.redistribute import symmetrize
from solvers.ormtr import ormtr
from solvers.potrf import potrf
import solvers.sygst as sygst_module
from solvers.sygst import sygst
from solvers.sytrd import sytrd
from solvers.problems import random_symmetric, spd_with_condition
from solver_testing import grid_shapes, poison_unreferenced, share_node_cores
from solvers.stevd import stevd
from solvers.trsm import trmm, trsm

share_node_cores(MPI.COMM_WORLD)
SHAPES = grid_shapes(MPI.COMM_WORLD.Get_size())
SIZES = [(1, 3), (23, 4), (24, 6), (10, 16)]
DTYPES = pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])




@DTYPES
@pytest.mark.parametrize("n,nb", SIZES)
def test_potrf(grid, seed, n, nb, dtype):
    b = spd_with_condition(np.random.default_rng(seed), n, 1e3, hermitian=np.dtype(dtype).kind == "c")
    coll = Collectives(grid)
    with coll.stage("potrf"):
        fac = potrf(DistMatrix.from_global(poison_unreferenced(b, True), grid, nb), coll)
    got = fac.to_global(coll)
    assert np.array_equal(got, np.tril(got)), f"seed={seed}: upper triangle not zero"
    np.testing.assert_allclose(got, np.linalg.cholesky(b), atol=1e-12, err_msg=f"seed={seed}")
    # Panels cross the grid; on one rank every collective is the identity and none is made.
    assert (coll.stats["potrf"].calls > 0) == (grid.size > 1)


@DTYPES
@pytest.mark.parametrize("n,nb", SIZES[1:3])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("solve", [True, False])
def test_trsm_trmm(grid, seed, n, nb, trans, solve, dtype):
    rng = np.random.default_rng(seed)
    hermitian = np.dtype(dtype).kind == "c"
    lfac = np.linalg.cholesky(spd_with_condition(rng, n, 10.0, hermitian))
    rhs = rng.standard_normal((n, n + 5)) + (1j * rng.standard_normal((n, n + 5)) if hermitian else 0)
    coll = Collectives(grid)
    dl = DistMatrix.from_global(poison_unreferenced(lfac, True), grid, nb).triangle(True)
    db = DistMatrix.from_global(rhs, grid, nb)
    (trsm if solve else trmm)(dl, db, coll, trans=trans)
    op = lfac.conj().T if trans else lfac
    expect = scipy.linalg.solve_triangular(op, rhs, lower=not trans) if solve else op @ rhs
    np.testing.assert_allclose(db.to_global(coll), expect, atol=1e-11, err_msg=f"seed={seed}")


def _sygst_case(grid, seed, n, nb, dtype, lower, itype, **options):
    """(C's lower triangle by sygst from A's ``lower`` triangle, the other poisoned; numpy's; the
    Collectives) for a random A and the Cholesky factor of a random B."""
    rng = np.random.default_rng(seed)
    hermitian = np.dtype(dtype).kind == "c"
    a = random_symmetric(rng, n, hermitian=hermitian)
    lfac = np.linalg.cholesky(spd_with_condition(rng, n, 10.0, hermitian))
    coll = Collectives(grid)
    dl = DistMatrix.from_global(poison_unreferenced(lfac, True), grid, nb).triangle(True)
    c = sygst(DistMatrix.from_global(poison_unreferenced(a, lower), grid, nb), lower, dl, itype, coll, **options)
    linv = scipy.linalg.solve_triangular(lfac, np.eye(n), lower=True)
    expect = linv @ a @ linv.conj().T if itype == 1 else lfac.conj().T @ a @ lfac
    return np.tril(c.to_global(coll)), np.tril(expect), coll


@DTYPES
@pytest.mark.parametrize("n,nb,block", [(1, 3, 7), (23, 4, 7), (24, 6, 24), (31, 5, 1024)])
@pytest.mark.parametrize("itype", [1, 2, 3])
def test_sygst_lower_triangle(grid, seed, n, nb, block, itype, dtype, monkeypatch):
    """C's lower triangle for each itype from A's lower one (the upper poisoned), whatever the
    one-rank lower-triangle solve's block (``block``: a few columns, n, more than n)."""
    monkeypatch.setattr(sygst_module, "LOWER_SOLVE_BLOCK", block)
    got, expect, _ = _sygst_case(grid, seed, n, nb, dtype, True, itype)
    np.testing.assert_allclose(got, expect, atol=1e-11, err_msg=f"seed={seed}")


@DTYPES
@pytest.mark.parametrize("n,nb,block,chunk", [(1, 3, 7, 3), (23, 4, 7, 5), (24, 6, 24, 24), (31, 5, 8, 1024),
                                             (40, 8, 3, 2)])
@pytest.mark.parametrize("lower", [True, False], ids=["A lower", "A upper"])
def test_sygst_blocked_lower_triangle(grid, seed, n, nb, block, chunk, lower, dtype, monkeypatch):
    """One rank's blocked way (itype 1): C's lower triangle from A's referenced one (the other
    poisoned), whatever its block and its update's chunk (a few columns, n, more than n);
    elsewhere the method is ignored and the distributed way runs."""
    monkeypatch.setattr(sygst_module, "BLOCKED_NB", block)
    monkeypatch.setattr(sygst_module, "HER2K_CHUNK", chunk)
    got, expect, coll = _sygst_case(grid, seed, n, nb, dtype, lower, 1, method="blocked")
    np.testing.assert_allclose(got, expect, atol=1e-11, err_msg=f"seed={seed}")
    if grid.size == 1:
        assert coll.stats["other"].notes["sygst"] == "blocked"


def test_sygst_rejects_an_unknown_method(grid):
    coll = Collectives(grid)
    eye = DistMatrix.from_global(np.eye(4), grid, 2)
    with pytest.raises(ValueError, match="method must be one of"):
        sygst(eye, True, eye, 1, coll, method="fast")


@DTYPES
@pytest.mark.parametrize("n,nb", SIZES + [(31, 5)])
def test_sytrd_tridiagonal_ormtr(grid, seed, n, nb, dtype):
    """Qᴴ C Q is the real tridiagonal (d, e), Q is orthogonal / unitary, and ormtr/unmtr(stevd)
    diagonalizes C (hetrd: complex tau, real d and e, as LAPACK's zhetrd)."""
    c = random_symmetric(np.random.default_rng(seed), n, hermitian=np.dtype(dtype).kind == "c")
    coll = Collectives(grid)
    dc = symmetrize(DistMatrix.from_global(poison_unreferenced(c, True), grid, nb), True, coll)
    d, e, tau = sytrd(dc, coll)
    assert d.dtype == e.dtype == np.float64 and tau.dtype == dtype
    assert np.array_equal(tau[-1:], [0.0])
    q = DistMatrix.from_global(np.eye(n, dtype=dtype), grid, nb)
    q = ormtr(dc, tau, q, coll).to_global(coll)
    np.testing.assert_allclose(q.conj().T @ q, np.eye(n), atol=1e-13, err_msg=f"seed={seed}")
    tri = np.diag(d) + np.diag(e, -1) + np.diag(e, 1)
    np.testing.assert_allclose(q.conj().T @ c @ q, tri, atol=1e-12, err_msg=f"seed={seed}")

    w, y = stevd(d, e, coll, vectors_like=dc)
    np.testing.assert_allclose(w, scipy.linalg.eigvalsh(c), atol=1e-12, err_msg=f"seed={seed}")
    z = ormtr(dc, tau, y, coll).to_global(coll)
    np.testing.assert_allclose(c @ z, z * w, atol=1e-12, err_msg=f"seed={seed}")
    assert "host_us_per_column" in coll.stats["other"].notes
