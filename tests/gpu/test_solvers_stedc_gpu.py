"""stedc on the GPU: the divide and conquer against LAPACK, the device secular root finder (one
kernel launch per merge, a warp per root) against the numpy reference, and the same bits from
run to run and on every rank. Skips where cupy or a GPU is missing."""
import hashlib

import numpy as np
import pytest
import scipy.linalg

from solver_gpu import COMM, cupy

import solvers.stedc_merge as stedc_merge  # noqa: E402
from solvers.stedc import stedc  # noqa: E402
from solvers.stedc_secular import _secular_roots  # noqa: E402
from solver_testing import shared_seed  # noqa: E402
from solvers.stevd import _stevd_leaves  # noqa: E402

EPS = np.finfo(np.float64).eps


@pytest.fixture
def seed():
    return shared_seed(COMM)


def _tridiagonals(rng, n):
    return {"random": (rng.standard_normal(n), rng.standard_normal(n - 1)),
            "toeplitz 2,1 (clustered)": (np.full(n, 2.0), np.ones(n - 1)),
            "graded": (10.0 ** (-np.arange(n) / 20), 10.0 ** (-np.arange(n - 1) / 20))}


def _distinct(d):
    """Ascending d with every tie moved up to the next double: the secular equation's poles are
    distinct once deflation has run (stedc_deflate.deflate), and a clustered draw of 3000 poles 1e-9
    apart repeats a value in about one seed of fifty (found on the CPU: seed 2918457392, whose
    equal poles made the numpy reference divide by zero)."""
    d = d.copy()
    for i in range(1, d.shape[0]):
        if d[i] <= d[i - 1]:
            d[i] = np.nextafter(d[i - 1], np.inf)
    return d


def _merge_problems(rng, monkeypatch):
    """(name, d, z, ρ) of the secular equations that numpy stedc's merges solve (deflated, as
    the device sees them), and synthetic ones: random, clustered poles with graded z, graded."""
    problems = []
    reference = stedc_merge.secular_roots

    def record(xp, d, z, rho, first=0, last=None):
        problems.append(("merge", d.copy(), z.copy(), rho))
        return reference(xp, d, z, rho, first, last)

    with monkeypatch.context() as patch:
        patch.setattr(stedc_merge, "secular_roots", record)
        for d, e in _tridiagonals(rng, 300).values():
            stedc(np, d, e, _stevd_leaves, 16)

    def unit(v):
        return v / np.linalg.norm(v)

    for k in (1, 2, 33, 1000, 3000):
        problems.append(("random", np.sort(rng.standard_normal(k)), unit(rng.standard_normal(k)), 1.3))
        centres = np.repeat(rng.standard_normal(8), -(-k // 8))[:k]
        problems.append(("clustered", _distinct(np.sort(centres + 1e-9 * rng.standard_normal(k))),
                         unit(rng.standard_normal(k) * 10.0 ** -rng.uniform(0, 6, k)), 0.7))
        problems.append(("graded", np.sort(10.0 ** -np.linspace(0, 12, k)),
                         unit(10.0 ** -np.linspace(0, 6, k) * rng.choice([-1.0, 1.0], k)), 1e-3))
    return problems


@pytest.mark.parametrize("leaf_size", [8, 64])
def test_stedc_on_gpu_matches_lapack(seed, leaf_size):
    """The GPU divide and conquer (tridiagonal stage of jobz=V): residual, orthogonality and
    eigenvalues against LAPACK, on random, clustered and graded tridiagonals."""
    n = 333
    for name, (d, e) in _tridiagonals(np.random.default_rng(seed), n).items():
        w, z = stedc(cupy, cupy.asarray(d), cupy.asarray(e), _stevd_leaves, leaf_size)
        assert isinstance(z, cupy.ndarray)
        w, z = cupy.asnumpy(w), cupy.asnumpy(z)
        t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
        norm = np.abs(t).max()
        assert np.abs(t @ z - z * w).max() <= 10 * n * EPS * norm, f"seed={seed} {name}: residual"
        assert np.abs(z.T @ z - np.eye(n)).max() <= 10 * n * EPS, f"seed={seed} {name}: orthogonality"
        want = scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True)
        np.testing.assert_allclose(w, want, rtol=0, atol=10 * n * EPS * norm, err_msg=f"seed={seed} {name}")


def test_device_secular_roots_match_numpy(seed, monkeypatch):
    """Every root within a few eps·‖D + ρ z zᵀ‖ of the numpy reference's (the two differ in the
    order of the pole sums, and in the reference iterating converged roots until its whole
    chunk is done), and the same bits on a second run."""
    for name, d, z, rho in _merge_problems(np.random.default_rng(seed), monkeypatch):
        k = d.shape[0]
        origin, tau = _secular_roots(np, d, z, rho)
        dev = [_secular_roots(cupy, cupy.asarray(d), cupy.asarray(z), rho) for _ in range(2)]
        (o1, t1), (o2, t2) = [(cupy.asnumpy(o), cupy.asnumpy(t)) for o, t in dev]
        what = f"seed={seed} {name} k={k}"
        assert o1.tobytes() == o2.tobytes() and t1.tobytes() == t2.tobytes(), what + ": not deterministic"
        lam, lam_dev = d[origin] + tau, d[o1] + t1
        scale = max(np.abs(d).max(), rho)
        assert np.abs(lam_dev - lam).max() <= 8 * EPS * scale, \
            f"{what}: max |λ_gpu − λ_np| = {np.abs(lam_dev - lam).max() / (EPS * scale):.1f} eps·scale"
        # Each root in its own bracket, measured from one of its two poles.
        assert np.all((o1 == np.arange(k)) | (o1 == np.arange(k) + 1)), what
        assert np.all(lam_dev >= d) and np.all(lam_dev[:-1] <= d[1:]), what + ": outside its bracket"


def test_stedc_on_gpu_same_bits_every_run_and_rank(seed):
    """Two runs give the same bits, and so does every rank (each keeps only its block-cyclic
    part of the eigenvectors, so they must agree); eigenvalues as numpy's stedc within rounding."""
    n = 1000
    for name, (d, e) in _tridiagonals(np.random.default_rng(seed), n).items():
        runs = [stedc(cupy, cupy.asarray(d), cupy.asarray(e), _stevd_leaves, 64) for _ in range(2)]
        (w1, z1), (w2, z2) = [(cupy.asnumpy(w), cupy.asnumpy(z)) for w, z in runs]
        what = f"seed={seed} {name}"
        assert w1.tobytes() == w2.tobytes() and z1.tobytes() == z2.tobytes(), what + ": not deterministic"
        digest = hashlib.sha256(w1.tobytes() + z1.tobytes()).hexdigest()
        assert len(set(COMM.allgather(digest))) == 1, what + ": ranks differ"
        w_np, _ = stedc(np, d, e, _stevd_leaves, 64)
        norm = max(np.abs(d).max(), np.abs(e).max())
        np.testing.assert_allclose(w1, w_np, rtol=0, atol=10 * n * EPS * norm, err_msg=what)


def test_a_merge_by_parts_on_gpu(seed):
    """The rows-by-rank merge on the device, in one process: two holders of half the
    components each, roots (each found alone by the kernel), ẑ and U's norms in three shares,
    U a few rows at a time and only the columns each half needs: the same eigenvalue bits for
    both, and together T's eigenvectors."""
    from solver_testing import merge_by_parts
    n = 333
    for name, (d, e) in _tridiagonals(np.random.default_rng(seed), n).items():
        (w1, part1), (w2, part2) = merge_by_parts(cupy, d, e, _stevd_leaves, shares=3, block=50)
        assert isinstance(part1, cupy.ndarray) and w1.dtype == np.float64
        what = f"seed={seed} {name}"
        assert cupy.asnumpy(w1).tobytes() == cupy.asnumpy(w2).tobytes(), what
        qt = np.concatenate((cupy.asnumpy(part1), cupy.asnumpy(part2)), axis=1)
        w = cupy.asnumpy(w1)
        t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
        norm = np.abs(t).max()
        assert np.abs(t @ qt.T - qt.T * w).max() <= 10 * n * EPS * norm, what + ": residual"
        assert np.abs(qt @ qt.T - np.eye(n)).max() <= 10 * n * EPS, what + ": orthogonality"


@pytest.mark.parametrize("kind", ["mpi", "hpcolls"])
def test_rows_by_rank_on_gpu(seed, kind):
    """The whole stage with cupy at this run's rank count (each rank its rows of Q on its
    device, its own block by stedc on the device, the shared arrays summed on the device):
    against LAPACK, eigenvalues bitwise alike on every rank, Z's blocks cupy of Z's dtype.
    At one rank stevd keeps the replicated path, so this calls the rows path directly too."""
    if kind == "hpcolls":
        pytest.importorskip("hpcolls")
    from solvers.backend import Collectives
    from solvers.distributed import DistMatrix, ProcessGrid
    from solvers.stedc_distributed import for_backend, stedc_distributed
    from solvers.plan import STEDC_LEAF
    from solvers.stevd import stevd
    grid = ProcessGrid(COMM)
    try:
        coll = Collectives(grid, kind, cupy)
        n = 1200
        for name, (d, e) in _tridiagonals(np.random.default_rng(seed), n).items():
            what = f"seed={seed} {name}"
            w_rows, qt_mine, bounds = stedc_distributed(cupy, d, e, coll,
                                                        for_backend(cupy, _stevd_leaves, STEDC_LEAF))
            assert isinstance(qt_mine, cupy.ndarray)
            assert qt_mine.shape == (n, bounds[grid.rank + 1] - bounds[grid.rank]), what
            layout = DistMatrix.empty(n, n, 64, grid, np.complex128, xp=cupy)
            with coll.stage("stedc"):
                w, z = stevd(cupy.asarray(d), cupy.asarray(e), coll, layout)
            assert isinstance(z.local, cupy.ndarray) and z.local.dtype == np.complex128, what
            w, zg = cupy.asnumpy(w), cupy.asnumpy(z.to_global(coll)).real
            if grid.size > 1:
                # stevd below takes the same path (its leaves of STEDC_LEAF): the same bits
                assert np.array_equal(w, cupy.asnumpy(w_rows)), what + ": two runs differ"
            t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
            norm = np.abs(t).max()
            assert np.abs(t @ zg - zg * w).max() <= 10 * n * EPS * norm, what + ": residual"
            assert np.abs(zg.T @ zg - np.eye(n)).max() <= 10 * n * EPS, what + ": orthogonality"
            want = scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True)
            np.testing.assert_allclose(w, want, rtol=0, atol=10 * n * EPS * norm, err_msg=what)
            digest = hashlib.sha256(w.tobytes()).hexdigest()
            assert len(set(COMM.allgather(digest))) == 1, what + ": ranks differ"
    finally:
        grid.free()


def test_eigenvalues_alone_come_from_the_device_multisection_from_its_order(seed):
    """Eigenvalues only (jobz N) of order DEVICE_EIGENVALUES_FROM and up: the kernels'
    multisection on the device, a share per rank, the same bits on every rank, subsets too; one
    order below, host dsterf (no such note). Both against LAPACK."""
    from solvers.backend import Collectives
    from solvers.distributed import ProcessGrid
    from solvers.plan import DEVICE_EIGENVALUES_FROM
    from solvers.stevd import stevd
    grid = ProcessGrid(COMM)
    try:
        coll = Collectives(grid, "mpi", cupy)
        rng = np.random.default_rng(seed)
        for n in (DEVICE_EIGENVALUES_FROM - 1, DEVICE_EIGENVALUES_FROM):
            d, e = rng.standard_normal(n), rng.standard_normal(n - 1)
            want_all = scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True)
            for select in (None, (1, n // 10)):
                what = f"seed={seed} n={n} select={select}"
                stage = f"values {n} {select}"
                with coll.stage(stage):
                    w, z = stevd(cupy.asarray(d), cupy.asarray(e), coll, None, select)
                assert z is None and isinstance(w, cupy.ndarray), what
                on_device = "eigenvalues_by" in coll.stats[stage].notes
                assert on_device == (n >= DEVICE_EIGENVALUES_FROM), what
                digest = hashlib.sha256(cupy.asnumpy(w).tobytes()).hexdigest()
                assert len(set(COMM.allgather(digest))) == 1, what + ": ranks differ"
                first, last = (0, n) if select is None else (select[0] - 1, select[1])
                norm = max(np.abs(d).max(), np.abs(e).max())
                np.testing.assert_allclose(cupy.asnumpy(w), want_all[first:last], rtol=0,
                                           atol=10 * n * EPS * norm, err_msg=what)
    finally:
        grid.free()


def test_a_selection_on_gpu_is_the_whole_solves_columns(seed):
    """stedc on the device with select=(first, last): the top merge forms only those
    eigenvectors (its GEMM on the wanted rows of U); eigenvalues bitwise the whole solve's, the
    eigenvectors its columns to rounding, with clusters and deflated eigenpairs across the
    edges (testing.straddled_tridiagonal) and on the usual shapes."""
    from solver_testing import selections_straddling, straddled_tridiagonal
    rng = np.random.default_rng(seed)
    cases = {"straddled": straddled_tridiagonal(rng, 250), **_tridiagonals(rng, 1000)}
    for name, (d, e) in cases.items():
        n = d.shape[0]
        w, z = (cupy.asnumpy(x) for x in stedc(cupy, cupy.asarray(d), cupy.asarray(e), _stevd_leaves, 64))
        for first, last in selections_straddling(w):
            what = f"seed={seed} {name} select=({first}, {last})"
            ws, zs = stedc(cupy, cupy.asarray(d), cupy.asarray(e), _stevd_leaves, 64, select=(first, last))
            assert isinstance(zs, cupy.ndarray) and zs.shape == (n, last - first), what
            assert cupy.asnumpy(ws).tobytes() == w[first:last].tobytes(), what + ": eigenvalues differ"
            diff = np.abs(cupy.asnumpy(zs) - z[:, first:last]).max()
            assert diff <= 16 * EPS, what + f": |Z - Z_all| = {diff:.1e}"


@pytest.mark.parametrize("tridiagonal", ["rows", "replicated"])
@pytest.mark.parametrize("real", [np.float32, np.float64])
def test_a_selection_at_this_rank_count_on_gpu(seed, real, tridiagonal):
    """tridiagonal.stevd with cupy at this run's rank count (rows per rank over P > 1 ranks,
    or the whole solve on every rank), select=(il, iu) against the all-eigenpairs solve:
    eigenvalues bitwise, Z's columns to rounding, for both real types, blocks cupy."""
    from solvers.backend import Collectives
    from solvers.distributed import DistMatrix, ProcessGrid
    from solver_testing import selections_straddling, straddled_tridiagonal
    from solvers.plan import resolve
    from solvers.stevd import stevd
    grid = ProcessGrid(COMM)
    try:
        coll = Collectives(grid, "mpi", cupy)
        d, e = (x.astype(real) for x in straddled_tridiagonal(np.random.default_rng(seed), 300))
        n = d.shape[0]

        def solve(select=None):
            k = n if select is None else select[1] - select[0] + 1
            layout = DistMatrix.empty(n, k, 64, grid, real, xp=cupy)
            with coll.stage("stedc"):
                w, z = stevd(cupy.asarray(d), cupy.asarray(e), coll, layout, select,
                             resolve(cupy, n, grid.size, tridiagonal=tridiagonal))
            assert isinstance(z.local, cupy.ndarray) and z.local.dtype == real
            return cupy.asnumpy(w), cupy.asnumpy(z.to_global(coll))

        w, z = solve()
        for first, last in selections_straddling(w.astype(np.float64)):
            what = f"seed={seed} {np.dtype(real).name} {tridiagonal} select=({first}, {last})"
            ws, zs = solve((first + 1, last))
            assert ws.tobytes() == w[first:last].tobytes(), what + ": eigenvalues differ"
            diff = np.abs(zs - z[:, first:last]).max()
            assert diff <= 16 * EPS + np.finfo(real).eps, what + f": |Z - Z_all| = {diff:.1e}"
    finally:
        grid.free()
