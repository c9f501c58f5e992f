"""sygvd / hegvd / eigh with cupy arrays on the GPU: same checks as the CPU suites, for float32,
float64, complex64 and complex128, by the distributed stages and by the single method (one
cuSOLVER call path on rank 0).

Runs as plain pytest (one rank) or under mpiexec (several ranks sharing GPUs need CUDA MPS,
see docs/ARCHITECTURE.md, "Targets and floors"). Skips with a clear reason where cupy or a GPU is missing.
"""
import numpy as np
import pytest
import scipy.linalg

from gpu_required import collective_kinds
from solver_gpu import COMM, DTYPE_IDS, DTYPES, cupy, wide

import solvers  # noqa: E402
from solvers.backend import Collectives  # noqa: E402
from solvers.distributed import DistMatrix, ProcessGrid  # noqa: E402
from solvers.sygvd import sygvd  # noqa: E402
from solvers.sytrd import sytrd  # noqa: E402
from solvers.cli.check import THRESHOLD, eigen_ratios, eigenvalue_ratio  # noqa: E402
from solver_testing import not_positive_definite, with_junk  # noqa: E402
from solvers.problems import random_symmetric, spd_with_condition  # noqa: E402


def _solve_and_check(grid, seed, itype, uplo, jobz, dtype, kind, method, reduction="1stage"):
    rng = np.random.default_rng(seed)
    n, nb = 45, 8
    lower = uplo == "L"
    hermitian = np.dtype(dtype).kind == "c"
    a, b = random_symmetric(rng, n, hermitian), spd_with_condition(rng, n, 100.0, hermitian)
    coll = Collectives(grid, kind, cupy)
    da = DistMatrix.from_global(cupy.asarray(with_junk(rng, a.astype(dtype), lower)), grid, nb)
    db = DistMatrix.from_global(cupy.asarray(with_junk(rng, b.astype(dtype), lower)), grid, nb)
    w, z = sygvd(da, db, coll, itype=itype, jobz=jobz, uplo=uplo, method=method, reduction=reduction,
                 band=4)
    assert isinstance(w, cupy.ndarray) and w.dtype == np.zeros(1, dtype).real.dtype
    every = grid.comm.allgather(cupy.asnumpy(w).tobytes())
    assert all(x == every[0] for x in every), f"seed={seed}: eigenvalues differ between ranks"
    eps = float(np.finfo(dtype).eps)
    a64, b64 = a.astype(dtype).astype(wide(dtype)), b.astype(dtype).astype(wide(dtype))
    w_host = cupy.asnumpy(w).astype(np.float64)
    ratios = eigenvalue_ratio(a64, b64, w_host, itype, eps)
    if jobz == "V":
        zg = z.to_global(coll)
        assert isinstance(zg, cupy.ndarray) and zg.dtype == dtype
        ratios.update(eigen_ratios(a64, b64, w_host, cupy.asnumpy(zg).astype(wide(dtype)), itype, eps))
    for name, value in ratios.items():
        assert value < THRESHOLD, f"seed={seed}: {name} = {value}"
    return coll


@pytest.mark.parametrize("reduction", ["1stage", "2stage"])
@pytest.mark.parametrize("kind", collective_kinds())
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("jobz", ["V", "N"])
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("itype", [1, 2, 3])
def test_sygvd_on_gpu_matches_scipy(grid, seed, itype, uplo, jobz, dtype, kind, reduction):
    """The distributed stages (hetrd, unmtr for complex: named so in the stage report), by
    either reduction (two-stage: bandwidth 4, half the block size; its chase on the GPU)."""
    coll = _solve_and_check(grid, seed, itype, uplo, jobz, dtype, kind, "distributed", reduction)
    complex_ = np.dtype(dtype).kind == "c"
    if reduction == "1stage":
        assert "host_us_per_column" in coll.stats["hetrd" if complex_ else "sytrd"].notes
    else:
        assert coll.stats["hb2st" if complex_ else "sb2st"].notes["chase"].startswith("GPU kernel")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("itype", [1, 2, 3])
def test_single_method_on_gpu_matches_scipy(grid, seed, itype, uplo, dtype):
    """One cuSOLVER path on rank 0 (potrf, triangular solves, syevd / heevd), handed to all."""
    coll = _solve_and_check(grid, seed, itype, uplo, "V", dtype, "mpi", "single")
    name = "hegvd" if np.dtype(dtype).kind == "c" else "sygvd"
    if grid.rank == 0:   # the rank that made the call notes what it was
        assert coll.stats[name].notes["call"].startswith("cuSOLVER"), coll.stats[name].notes


@pytest.mark.parametrize("kind", collective_kinds())
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("n, nb", [(1, 1), (2, 2), (20, 32), (45, 8), (130, 32), (300, 64), (700, 256)])
def test_sytrd_native_loop_is_a_stable_reduction(grid, seed, kind, dtype, n, nb):
    """The native column loop's Q (from its reflectors, through ormtr) is orthogonal and
    Qᵀ A Q is its tridiagonal, to the backward error a Householder reduction promises, as for
    the Python loop beside it — with each local product the grid allows (one rank: the hemv
    reading the lower triangle, and the gemv); and every rank gets the same bits. (d and e of
    two correct reductions may differ far beyond rounding: T's forward error is not bounded by
    it.) The upper triangle is left as it is: sytrd reads a full symmetric matrix."""
    a = random_symmetric(np.random.default_rng([seed, n]), n).astype(dtype)
    coll = Collectives(grid, kind, cupy)
    products = ["hemv_lower", "gemv"] if COMM.Get_size() == 1 else ["gemv"]
    for loop_kind in [f"native, {p}" for p in products] + ["python"]:
        product = loop_kind.split(", ")[1] if loop_kind != "python" else None
        _check_sytrd(a, grid, coll, nb, loop_kind, f"seed={seed} {loop_kind}", product)


@pytest.mark.parametrize("scale", [1e-160, 1e160])
def test_sytrd_native_loop_on_tiny_and_huge_entries(grid, seed, scale):
    """Columns whose squares underflow or overflow take the scaled norm of the reflector."""
    a = random_symmetric(np.random.default_rng([seed, 7]), 130) * scale
    _check_sytrd(a, grid, Collectives(grid, "mpi", cupy), 32, "native", f"seed={seed} scale={scale}")


def _check_sytrd(a, grid, coll, nb, loop_kind, what, product=None):
    from solvers.ormtr import ormtr
    n, dtype = a.shape[0], a.dtype
    a64 = a.astype(wide(dtype))
    eps = float(np.finfo(dtype).eps)
    bound = 20 * n * eps * np.abs(a64).sum(axis=0).max()
    native = loop_kind != "python"
    c = DistMatrix.from_global(cupy.asarray(a), grid, nb)
    coll.reset()
    d, e, tau = sytrd(c, coll, native=native, product=product)
    stats = coll.stats["other"]
    assert stats.notes["column_loop"].startswith(loop_kind), stats.notes["column_loop"]
    # One column AllReduce per reflector, counted once whichever way it went (none on one rank),
    # plus the panel gathers (gather_block_col) this rank's grid column made over a column of
    # more than one rank.
    columns = max(n - 1, 0) if COMM.Get_size() > 1 else 0
    panels = (n + nb - 1) // nb
    gathers = sum(grid.mycol == c.block_owner_col(k) for k in range(panels)) if grid.nprow > 1 else 0
    expected = columns + gathers
    assert stats.by_op.get("allreduce", [0])[0] == expected, (what, stats.by_op)
    q = ormtr(c, tau, DistMatrix.from_global(cupy.eye(n, dtype=dtype), grid, nb), coll)
    q = cupy.asnumpy(q.to_global(coll)).astype(wide(dtype))
    d, e = cupy.asnumpy(d).astype(np.float64), cupy.asnumpy(e).astype(np.float64)
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    assert np.abs(q.conj().T @ a64 @ q - t).sum(axis=0).max() <= bound, what + ": Q^H A Q != T"
    assert np.abs(q.conj().T @ q - np.eye(n)).sum(axis=0).max() <= 20 * n * eps, what + ": Q not unitary"
    if native:
        digests = COMM.allgather(d.tobytes() + e.tobytes() + cupy.asnumpy(tau).tobytes())
        assert len(set(digests)) == 1, "ranks computed different d, e, tau"


def test_sytrd_profile_notes_every_phase(grid, seed):
    """sytrd(..., profile=True) notes the GPU time of each phase of the native column loop."""
    from solvers import _kernels
    a = random_symmetric(np.random.default_rng(seed), 200)
    coll = Collectives(grid, "hpcolls" if "hpcolls" in collective_kinds() else "mpi", cupy)
    sytrd(DistMatrix.from_global(cupy.asarray(a), grid, 32), coll, profile=True)
    phases = coll.stats["other"].notes["sytrd_phase_ms"]
    assert list(phases) == list(_kernels.SYTRD_PHASES)
    assert phases["product"] > 0 and phases["column"] > 0
    assert (phases["allreduce"] > 0) == (COMM.Get_size() > 1)


@pytest.mark.parametrize("kind", collective_kinds())
def test_sygvd_on_gpu_through_divide_and_conquer(grid, seed, kind, monkeypatch):
    """A solve whose tridiagonal stage merges many blocks (small leaves), residuals as LAPACK
    asks for generalized problems."""
    import solvers.plan
    monkeypatch.setattr(solvers.plan, "STEDC_LEAF", 8)
    rng = np.random.default_rng(seed)
    n, nb = 150, 16
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 100.0)
    coll = Collectives(grid, kind, cupy)
    w, z = sygvd(DistMatrix.from_global(cupy.asarray(a), grid, nb),
                 DistMatrix.from_global(cupy.asarray(b), grid, nb), coll, itype=1, jobz="V",
                 method="distributed")
    ratios = eigen_ratios(a, b, cupy.asnumpy(w), cupy.asnumpy(z.to_global(coll)), 1, np.finfo(np.float64).eps)
    ratios.update(eigenvalue_ratio(a, b, cupy.asnumpy(w), 1, np.finfo(np.float64).eps))
    for name, value in ratios.items():
        assert value < THRESHOLD, f"seed={seed}: {name} = {value}"


@pytest.mark.parametrize("method", ["auto", "distributed", "single"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
def test_eigh_cupy_in_cupy_out(seed, dtype, method):
    rng = np.random.default_rng(seed)
    hermitian = np.dtype(dtype).kind == "c"
    a, b = random_symmetric(rng, 30, hermitian), spd_with_condition(rng, 30, 10.0, hermitian)
    w, z = solvers.eigh(cupy.asarray(a), cupy.asarray(b), type=3, comm=COMM, nb=7, method=method)
    assert isinstance(w, cupy.ndarray) and isinstance(z, cupy.ndarray)
    assert w.dtype == np.float64 and z.dtype == dtype
    np.testing.assert_allclose(cupy.asnumpy(w), scipy.linalg.eigh(a, b, type=3, eigvals_only=True),
                               rtol=1e-10, atol=1e-12, err_msg=f"seed={seed}")


@pytest.mark.parametrize("reduction", ["1stage", "2stage"])
@pytest.mark.parametrize("method", ["distributed", "single"])
@pytest.mark.parametrize("scale", [1e-170, 1e160])
def test_far_scaled_matrices_on_gpu(seed, scale, method, reduction):
    """solvers/scaling.py on the device (distributed), and cuSOLVER's own handling (single): the
    eigenvalues of s·A as scipy's, a subset by value too (its bounds scaled with the matrix)."""
    rng = np.random.default_rng(seed)
    a = scale * random_symmetric(rng, 40, False)
    ref = scipy.linalg.eigvalsh(a)
    vl, vu = (ref[3] + ref[4]) / 2, (ref[20] + ref[21]) / 2
    for keywords, picked in (({}, slice(None)), ({"subset_by_value": [vl, vu]}, slice(4, 21))):
        w, z = solvers.eigh(cupy.asarray(a), comm=COMM, nb=8, method=method, reduction=reduction, **keywords)
        w, z = cupy.asnumpy(w), cupy.asnumpy(z)
        what = f"seed={seed} {keywords}"
        np.testing.assert_allclose(w, ref[picked], rtol=0, atol=1e-12 * np.abs(ref).max(), err_msg=what)
        np.testing.assert_allclose(a @ z, z * w, rtol=0, atol=1e-12 * np.abs(ref).max(), err_msg=what)


@pytest.mark.parametrize("method", ["distributed", "single"])
@pytest.mark.parametrize("hermitian", [False, True])
def test_not_positive_definite_on_gpu(seed, hermitian, method):
    rng = np.random.default_rng(seed)
    b = not_positive_definite(rng, 20, 11, hermitian)
    with pytest.raises(np.linalg.LinAlgError) as err:
        solvers.eigh(cupy.asarray(random_symmetric(rng, 20, hermitian)), cupy.asarray(b), comm=COMM, nb=4,
                     method=method)
    assert err.value.info == 11, f"seed={seed}"


@pytest.mark.skipif(COMM.Get_size() < 2, reason="a one-rank scope skips the transport altogether")
def test_collectives_reach_the_native_entries(seed):
    """The solver's door looks its Allreduce and Bcast methods up at every call, so once hpcolls'
    native path is open its panel broadcasts and reductions take the native entries
    (native/hpcolls/fast_entry.cpp), not the Python methods; each call still counted in its stage."""
    pytest.importorskip("hpcolls")
    grid = ProcessGrid(COMM, (COMM.Get_size(), 1))
    try:
        coll = Collectives(grid, "hpcolls", cupy)
        x = cupy.full(5, float(COMM.Get_rank()))
        coll.allreduce(x)  # opens the native path
        wrapper = coll._wrappers["all"]
        assert {"Allreduce", "Bcast"} <= set(vars(wrapper)), "the native entries were not installed"
        handed_on = []

        def counted(name):
            def full(*args, **kwargs):
                handed_on.append((name, args))
                return getattr(type(wrapper), name)(wrapper, *args, **kwargs)
            return full

        wrapper._install_fast({"Allreduce": counted("Allreduce"), "Bcast": counted("Bcast")})
        rng = np.random.default_rng([seed, COMM.Get_rank()])
        host = rng.standard_normal(33)
        with coll.stage("panels"):
            y = cupy.asarray(host)
            coll.allreduce(y)
            want = np.sum(COMM.allgather(host), axis=0)
            np.testing.assert_allclose(cupy.asnumpy(y), want, rtol=1e-13, atol=1e-13)
            everyone = COMM.allgather(host)
            for root in range(COMM.Get_size()):
                z = cupy.asarray((host + 1j * host) if root % 2 else host)  # complex travels as its reals
                coll.bcast(z, root=root)
                assert np.array_equal(cupy.asnumpy(z), (everyone[root] + 1j * everyone[root]) if root % 2
                                      else everyone[root]), f"Bcast from {root}"
        assert not handed_on, f"the solver's collectives went through the Python methods: {handed_on}"
        stats = coll.stats["panels"].by_op
        assert stats["allreduce"][0] == 1 and stats["bcast"][0] == COMM.Get_size(), stats
    finally:
        grid.free()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_blocked_sygst_on_gpu_matches_the_solves(seed, dtype, uplo, monkeypatch):
    """One rank's two ways of itype 1 (solvers/sygst.py) agree on the GPU, the blocked one with
    blocks and update chunks that do not divide n (its solves and GEMMs on views of C and L)."""
    import solvers.sygst as sygst_module
    monkeypatch.setattr(sygst_module, "BLOCKED_NB", 24)
    monkeypatch.setattr(sygst_module, "HER2K_CHUNK", 40)
    rng = np.random.default_rng(seed)
    n, nb, lower = 101, 8, uplo == "L"
    hermitian = np.dtype(dtype).kind == "c"
    a = random_symmetric(rng, n, hermitian).astype(dtype)
    lfac = np.linalg.cholesky(spd_with_condition(rng, n, 10.0, hermitian)).astype(dtype)
    grid = ProcessGrid(COMM.Split(COMM.Get_rank()))
    coll = Collectives(grid, "mpi", cupy)
    da = DistMatrix.from_global(cupy.asarray(with_junk(rng, a, lower)), grid, nb)
    dl = DistMatrix.from_global(cupy.asarray(lfac), grid, nb)
    got = {way: cupy.asnumpy(cupy.tril(sygst_module.sygst(da, lower, dl, 1, coll, method=way).local))
           for way in ("blocked", "solves")}
    grid.free()
    eps = float(np.finfo(dtype).eps)
    scale = np.abs(got["solves"]).max()
    assert np.abs(got["blocked"] - got["solves"]).max() < 100 * n * eps * scale, f"seed={seed}"
    linv = np.linalg.inv(lfac.astype(wide(dtype)))
    expect = np.tril(linv @ a.astype(wide(dtype)) @ linv.conj().T)
    assert np.abs(got["blocked"] - expect).max() < 100 * n * eps * scale, f"seed={seed}"


@pytest.mark.skipif(COMM.Get_size() < 2, reason="one rank makes no collective kernel wait on another")
def test_8192_solve_with_every_collective_on_the_ll_protocol(monkeypatch):
    """`solvers.bench --n 8192` with hpcolls' collectives on the LL protocol only, which timed out
    with ranks sharing a GPU while the kernels let the next kernel on their stream start early
    there (dependent_launch.cuh; docs/PERFORMANCE.md#early-start). Every rank must finish (a
    time-out raises CollectiveTimeout here)."""
    pytest.importorskip("hpcolls")
    from solvers.bench.sygvd import main
    monkeypatch.setenv("HPCOLLS_PROTOCOL", "ll")
    assert main(["--n", "8192", "--collectives", "hpcolls", "--no-cusolver", "--no-cusolvermp", "--repeat", "1",
                 "--warmup", "0"]) == 0
