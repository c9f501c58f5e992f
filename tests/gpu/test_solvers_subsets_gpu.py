"""Eigenpair subsets (#26) with cupy arrays on the GPU: sygvd / hegvd by index and by value
(empty included) against scipy with the same range, the eigenvector stage's per-rank shapes,
a factored B reused, solvers.eigh's subset keywords cupy in → cupy out. A GPU run finds the
subset's tridiagonal eigenpairs by divide and conquer of all on the device (the wanted kept), or,
asked for MRRR, on the host (stebz, stemr); around it: sytrd, the back-transformations on k
columns, the Alltoallv into Z's device layout.

Runs as plain pytest (one rank) or under mpiexec (ranks sharing a GPU need CUDA MPS); skips
with a reason where cupy or a GPU is missing."""
import numpy as np
import pytest
import scipy.linalg

from gpu_required import collective_kinds
from solver_gpu import COMM, DTYPE_IDS, DTYPES, cupy

import solvers  # noqa: E402
from solvers.backend import Collectives  # noqa: E402
from solvers.distributed import DistMatrix, numroc  # noqa: E402
from solvers.subset import EigenRange  # noqa: E402
from solvers.sygvd import sygvd  # noqa: E402
from solvers.cli.check import THRESHOLD, eigen_ratios  # noqa: E402
from solvers.problems import random_symmetric, spd_with_condition  # noqa: E402
from solver_testing import with_junk  # noqa: E402


def _pencil(rng, n, dtype):
    hermitian = np.dtype(dtype).kind == "c"
    return (random_symmetric(rng, n, hermitian).astype(dtype),
            spd_with_condition(rng, n, 100.0, hermitian).astype(dtype))


def _ranges(w):
    """(EigenRange, scipy keywords): an index range, one pair, a value range, an empty one."""
    mid = (w[1:] + w[:-1]) / 2
    n = w.shape[0]
    empty = (w[5] + (w[6] - w[5]) / 3, w[5] + 2 * (w[6] - w[5]) / 3)
    return [(EigenRange.by_index(2, n // 3), {"subset_by_index": [1, n // 3 - 1]}),
            (EigenRange.by_index(n, n), {"subset_by_index": [n - 1, n - 1]}),
            (EigenRange.by_value(mid[3], mid[n // 2]), {"subset_by_value": [mid[3], mid[n // 2]]}),
            (EigenRange.by_value(*empty), {"subset_by_value": list(empty)})]


@pytest.mark.parametrize("solver", ["auto", "mrrr", "invit", "dc"])
@pytest.mark.parametrize("kind", collective_kinds())
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("itype", [1, 3])
def test_subsets_on_gpu_match_scipy(grid, seed, itype, uplo, dtype, kind, solver):
    """auto: what a GPU run takes (invit up to a quarter of n, else dc); invit: multisection and
    inverse iteration on the device; dc: divide and conquer of all on the device, the wanted
    kept; mrrr: bisection + MRRR on the host, the vectors moved into the device layout."""
    rng = np.random.default_rng(seed)
    n, nb = 45, 8
    lower = uplo == "L"
    a, b = _pencil(rng, n, dtype)
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    eps = float(np.finfo(dtype).eps)
    coll = Collectives(grid, kind, cupy)
    da = DistMatrix.from_global(cupy.asarray(with_junk(rng, a, lower)), grid, nb)
    db = DistMatrix.from_global(cupy.asarray(with_junk(rng, b, lower)), grid, nb)
    for subset, keywords in _ranges(scipy.linalg.eigvalsh(a, b, type=itype)):
        coll.reset()
        w, z = sygvd(da, db, coll, itype=itype, uplo=uplo, subset=subset.solved_by(solver),
                     method="distributed")
        assert ("stemr" in coll.stats) == (solver == "mrrr"), set(coll.stats)
        if solver == "invit":
            assert "stein" in coll.stats, set(coll.stats)
        w_ref = scipy.linalg.eigh(a, b, type=itype, lower=lower, eigvals_only=True, **keywords)
        assert isinstance(w, cupy.ndarray) and w.dtype == w_ref.dtype and w.shape == w_ref.shape
        k = w_ref.shape[0]
        assert z.shape == (n, k) and isinstance(z.local, cupy.ndarray) and z.dtype == dtype
        assert z.local.shape == (numroc(n, nb, grid.myrow, 0, grid.nprow),
                                 numroc(k, nb, grid.mycol, 0, grid.npcol))
        tol = 1e-3 if eps > 1e-10 else 1e-10
        np.testing.assert_allclose(cupy.asnumpy(w), w_ref, rtol=tol, atol=tol, err_msg=f"seed={seed}")
        if k:
            ratios = eigen_ratios(a.astype(wide), b.astype(wide), cupy.asnumpy(w).astype(np.float64),
                                  cupy.asnumpy(z.to_global(coll)).astype(wide), itype, eps)
            for name, value in ratios.items():
                assert value < THRESHOLD, f"seed={seed} {subset}: {name} = {value}"


def test_factored_b_on_gpu_has_the_bits_of_b(grid, seed):
    """potrf once on the device, three A against it: each the bits of the solve against B."""
    from solvers.potrf import potrf
    rng = np.random.default_rng(seed)
    n, nb = 60, 16
    _, b = _pencil(rng, n, np.float64)
    coll = Collectives(grid, "mpi", cupy)
    db = DistMatrix.from_global(cupy.asarray(b), grid, nb)
    lfac = potrf(db.triangle(lower=True), coll)
    subset = EigenRange.by_index(1, 12)
    for _ in range(3):
        a, _ = _pencil(rng, n, np.float64)
        da = DistMatrix.from_global(cupy.asarray(a), grid, nb)
        w1, z1 = sygvd(da, lfac, coll, subset=subset, b_factored=True, method="distributed")
        w2, z2 = sygvd(da, db, coll, subset=subset, method="distributed")
        assert cupy.array_equal(w1, w2) and cupy.array_equal(z1.local, z2.local), f"seed={seed}"


def test_eigh_subsets_cupy_in_cupy_out(seed):
    rng = np.random.default_rng(seed)
    a, b = _pencil(rng, 40, np.complex128)
    for method in ("auto", "distributed"):
        w, z = solvers.eigh(cupy.asarray(a), cupy.asarray(b), subset_by_index=[3, 12], comm=COMM,
                            nb=8, method=method)
        assert isinstance(w, cupy.ndarray) and isinstance(z, cupy.ndarray) and z.shape == (40, 10)
        np.testing.assert_allclose(cupy.asnumpy(w), scipy.linalg.eigh(a, b, eigvals_only=True,
                                                                      subset_by_index=[3, 12]),
                                   rtol=1e-10, atol=1e-12, err_msg=f"seed={seed} {method}")
    with solvers.cholesky(cupy.asarray(b), comm=COMM, nb=8) as f:
        w, z = solvers.eigh(cupy.asarray(a), f, subset_by_value=[-np.inf, 0.0])
        ref = scipy.linalg.eigh(a, b, eigvals_only=True, subset_by_value=[-np.inf, 0.0])
        np.testing.assert_allclose(cupy.asnumpy(w), ref, rtol=1e-10, atol=1e-12, err_msg=f"seed={seed}")
