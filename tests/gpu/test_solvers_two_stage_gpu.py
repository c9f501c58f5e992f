"""The two-stage reduction (#27) with cupy arrays on the GPU: the cuBLAS in-place product of
backend.arrays (the trailing and back-transformation updates) against the plain one; sb2st's
GPU chase (native/solvers/sb2st_device.cu) against scipy and the host chase, bitwise the same
for any number of worker blocks, and the host fallback where a block's shared memory is short;
sy2sb and its panel QR (CholeskyQR2, the geqrf fallback) on the device; subsets with
reduction='2stage' and solvers.eigh cupy in → cupy out (every dtype × itype × uplo × jobz ×
collectives kind end to end: test_solvers_sygvd_gpu.py, parametrized with the reduction).

Runs as plain pytest (one rank) or under mpiexec (ranks sharing a GPU need CUDA MPS); skips
with a reason where cupy or a GPU is missing."""
import numpy as np
import pytest
import scipy.linalg

from solver_gpu import COMM, DTYPE_IDS, DTYPES, cupy, wide

import solvers  # noqa: E402
from solvers.backend import Collectives  # noqa: E402
import solvers.backend.arrays as arrays  # noqa: E402
from solvers.backend.arrays import add_product, adjoint_product, subtract_product  # noqa: E402
from solvers.distributed import DistMatrix, ProcessGrid  # noqa: E402
from solvers.ormtr import ormtr  # noqa: E402
import solvers.ormtr_sb2st as ormtr_sb2st_module  # noqa: E402
from solvers.ormtr_sb2st import ormtr_sb2st  # noqa: E402
from solvers.panel_qr import panel_qr  # noqa: E402
from solvers.sb2st import sb2st  # noqa: E402
from solvers.sb2st_native import THREADS_PER_BLOCK  # noqa: E402
from solvers.subset import EigenRange  # noqa: E402
from solvers.sy2sb import sy2sb  # noqa: E402
from solvers.sygvd import sygvd  # noqa: E402
from solvers.cli.check import THRESHOLD, eigen_ratios  # noqa: E402
from solvers.plan import choose_subset_solver  # noqa: E402
from solver_testing import householder_qr_errors, panel_with_condition, with_junk  # noqa: E402
from solvers.problems import band_to_full, random_band, random_symmetric, spd_with_condition  # noqa: E402


def _random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


@pytest.fixture
def one_rank():
    grid = ProcessGrid(COMM.Split(COMM.Get_rank()))
    yield Collectives(grid, "mpi", cupy)
    grid.free()


@pytest.mark.parametrize("adjoint_b", [False, True], ids=["b", "b^H"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_subtract_product_into_a_view_is_the_plain_product(seed, dtype, adjoint_b):
    """out -= a op(b) into a block of a larger array; op(b) = bᴴ read from rows of a larger b
    where they lie (sy2sb's trailing update), as one gemm."""
    rng = np.random.default_rng(seed)
    big = _random(rng, (70, 90), dtype)
    a = _random(rng, (50, 12), dtype)
    b_all = _random(rng, (60, 12) if adjoint_b else (12, 40), dtype)
    b = b_all[7:47] if adjoint_b else b_all
    out = cupy.asarray(big)
    b_dev = cupy.asarray(b_all)[7:47] if adjoint_b else cupy.asarray(b_all)
    assert arrays._gemm_views(cupy.empty((50, 40), dtype), cupy.asarray(a), b_dev, 1, 0, adjoint_b=adjoint_b), \
        "not one gemm"
    subtract_product(cupy, out[13:63, 41:81], cupy.asarray(a), b_dev, adjoint_b=adjoint_b)
    want = big.copy()
    want[13:63, 41:81] -= a @ (b.conj().T if adjoint_b else b)
    eps = np.finfo(dtype).eps
    assert np.abs(cupy.asnumpy(out) - want).max() < 100 * eps * (1 + np.abs(want).max()), f"seed={seed}"
    untouched = np.ones(big.shape, bool)
    untouched[13:63, 41:81] = False
    assert np.array_equal(cupy.asnumpy(out)[untouched], big[untouched])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_batched_subtract_product_into_evenly_spaced_blocks(seed, dtype):
    """ormtr_sb2st's update: blocks of 9 rows every 11 rows of a C-contiguous array."""
    rng = np.random.default_rng(seed)
    big = _random(rng, (60, 30), dtype)
    a, b = _random(rng, (5, 9, 4), dtype), _random(rng, (5, 4, 30), dtype)
    out = cupy.asarray(big)
    item = big.itemsize
    view = cupy.lib.stride_tricks.as_strided(out[3:], shape=(5, 9, 30), strides=(11 * 30 * item, 30 * item, item))
    subtract_product(cupy, view, cupy.asarray(a), cupy.asarray(b))
    want = big.copy()
    for i in range(5):
        want[3 + 11 * i:12 + 11 * i] -= a[i] @ b[i]
    eps = np.finfo(dtype).eps
    assert np.abs(cupy.asnumpy(out) - want).max() < 100 * eps * (1 + np.abs(want).max()), f"seed={seed}"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_adjoint_product_of_evenly_spaced_blocks_where_they_lie(seed, dtype):
    """ormtr_sb2st's W = Vᴴ Y: blocks of 9 rows every 11 rows of a C-contiguous array, read by one
    strided-batched gemm (conjugate-transposed V), against numpy; the array left as it was."""
    rng = np.random.default_rng(seed)
    big = _random(rng, (60, 30), dtype)
    v = _random(rng, (5, 9, 4), dtype)
    item = big.itemsize
    dev = cupy.asarray(big)
    y = cupy.lib.stride_tricks.as_strided(dev[3:], shape=(5, 9, 30), strides=(11 * 30 * item, 30 * item, item))
    got = cupy.asnumpy(adjoint_product(cupy, cupy.asarray(v), y))
    assert arrays._gemm_views(cupy.empty((5, 4, 30), dtype), cupy.asarray(v), y, 1, 0, adjoint_a=True), \
        "the view did not take the one-gemm path"
    want = np.stack([v[i].conj().T @ big[3 + 11 * i:12 + 11 * i] for i in range(5)])
    eps = np.finfo(dtype).eps
    assert got.shape == (5, 4, 30)
    assert np.abs(got - want).max() < 100 * eps * (1 + np.abs(want).max()), f"seed={seed}"
    assert np.array_equal(cupy.asnumpy(dev), big)


@pytest.mark.parametrize("adjoint", [False, True], ids=["a", "a^H"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_add_product_of_a_block_read_where_it_lies(seed, dtype, adjoint):
    """sy2sb's X += C₂₂ V and X += C₂₂ᴴ V: a block of a larger array, read where it lies by one
    gemm, times V, into some rows of X; against numpy, the rest of X and the array untouched."""
    rng = np.random.default_rng(seed)
    big = _random(rng, (70, 90), dtype)
    block = big[13:63, 41:81]                                   # 50 x 40
    op_block = block.conj().T if adjoint else block
    m, k = op_block.shape
    v, x = _random(rng, (k, 6), dtype), _random(rng, (m + 10, 6), dtype)
    big_dev, v_dev, x_dev = cupy.asarray(big), cupy.asarray(v), cupy.asarray(x)
    blk = big_dev[13:63, 41:81]
    assert arrays._gemm_views(cupy.empty((m, 6), dtype), blk, v_dev, 1, 0, adjoint), "not one gemm"
    add_product(cupy, x_dev[5:5 + m], blk, v_dev, adjoint_a=adjoint)
    want = x.copy()
    want[5:5 + m] += op_block @ v
    eps = np.finfo(dtype).eps
    assert np.abs(cupy.asnumpy(x_dev) - want).max() < 100 * eps * (1 + np.abs(want).max()), f"seed={seed}"
    assert np.array_equal(cupy.asnumpy(big_dev), big)


# Block sizes per dtype: the default, and fewer or more threads than a block's rows; 1024 for real
# data only (a complex chase may hold more registers a thread than 1024 threads allow:
# test_gpu_chase_at_1024_threads_runs_or_says_why_not).
CHASE_THREADS = [(dtype, threads) for dtype in DTYPES for threads in (None, 32, 512)] + \
    [(dtype, 1024) for dtype in DTYPES if np.dtype(dtype).kind == "f"]
CHASE_THREAD_IDS = [f"{DTYPE_IDS[DTYPES.index(dtype)]}-{threads or 'default'}-threads" for dtype, threads in CHASE_THREADS]


@pytest.mark.parametrize("dtype,threads", CHASE_THREADS, ids=CHASE_THREAD_IDS)
@pytest.mark.parametrize("n,b,g", [(300, 16, 16), (257, 8, 4), (64, 64, 64), (541, 64, 64), (40, 7, 9), (3, 5, 5),
                                   (2, 1, 1)])
def test_gpu_chase_tridiagonalizes_the_band(one_rank, seed, n, b, g, dtype, threads):
    """At the default block size and at others (each step's loops and batched loads spread over
    fewer or more threads than a block's rows); b = 64 is the kernel built for that bandwidth
    (541: sweeps of several steps, each ending with one of fewer rows)."""
    rng = np.random.default_rng(seed)
    ab = random_band(rng, n, b, dtype)
    d, e, refl = sb2st(cupy.asarray(ab), b, one_rank, True, group=g, chase_threads=threads)
    chase = one_rank.stats["other"].notes["chase"]
    assert chase.startswith(f"GPU kernel ({threads or THREADS_PER_BLOCK} threads"), chase
    d, e = cupy.asnumpy(d).astype(np.float64), cupy.asnumpy(e).astype(np.float64)
    big = band_to_full(ab)
    eps = np.finfo(dtype).eps
    norm = max(np.abs(big).max(), 1.0)
    w = scipy.linalg.eigvalsh_tridiagonal(d, e) if n > 1 else d
    assert np.abs(w - scipy.linalg.eigvalsh(big.astype(wide(dtype)))).max() < 20 * n * eps * norm, f"seed={seed}"
    q = cupy.asnumpy(ormtr_sb2st(refl, cupy.eye(n, dtype=dtype)))
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    assert np.abs(q.conj().T @ big @ q - t).max() < 10 * n * eps * norm, f"seed={seed}"
    assert np.abs(q.conj().T @ q - np.eye(n)).max() < 10 * n * eps, f"seed={seed}"
    # The host chase on the same band agrees to rounding (its sums run in another order).
    d_host, e_host, _ = sb2st(ab, b, Collectives(one_rank.grid), False, group=g)
    if n > 1:
        w_host = scipy.linalg.eigvalsh_tridiagonal(d_host.astype(np.float64), e_host.astype(np.float64))
        assert np.abs(w_host - w).max() < 20 * n * eps * norm, f"seed={seed}"


@pytest.mark.parametrize("b", [12, 64])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_gpu_chase_at_1024_threads_runs_or_says_why_not(one_rank, seed, dtype, b):
    """1024 threads a block: the kernel runs, or (its registers allow fewer) the call refuses with
    a ValueError naming the limit, not a failed launch."""
    rng = np.random.default_rng(seed)
    n = 200
    ab = random_band(rng, n, b, dtype)
    try:
        d, e, _ = sb2st(cupy.asarray(ab), b, one_rank, False, chase_threads=1024)
    except ValueError as error:
        assert "threads a block, not 1024" in str(error), error
        return
    d_host, e_host, _ = sb2st(ab, b, Collectives(one_rank.grid), False)
    w = scipy.linalg.eigvalsh_tridiagonal(cupy.asnumpy(d).astype(np.float64), cupy.asnumpy(e).astype(np.float64))
    w_host = scipy.linalg.eigvalsh_tridiagonal(d_host.astype(np.float64), e_host.astype(np.float64))
    assert np.abs(w - w_host).max() < 20 * n * np.finfo(dtype).eps * max(np.abs(ab).max(), 1.0), f"seed={seed}"


@pytest.mark.parametrize("b", [12, 64])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
def test_gpu_chase_is_bitwise_the_same_for_any_number_of_blocks(seed, dtype, b):
    from solvers import _kernels as native
    from solvers.sb2st import BulgeLayout
    rng = np.random.default_rng(seed)
    n, g = 500, b
    ab = random_band(rng, n, b, dtype)
    layout = BulgeLayout.create(n, b, g)
    index = cupy.asarray(layout.index)
    results = []
    for workers in (1, 3, 0):
        work = cupy.zeros((n, 2 * b), dtype=dtype)
        work[:, :b + 1] = cupy.asarray(ab)
        work[:, 0] = cupy.asarray(ab[:, 0].real)
        v = cupy.zeros((layout.groups, layout.height, g), dtype=dtype)
        tau = cupy.zeros((layout.groups, g), dtype=dtype)
        scratch = cupy.empty(native.sb2st_device_work_bytes(n), dtype=np.uint8)
        native.sb2st_device(native.DTYPES[np.dtype(dtype).name], cupy.cuda.Device().id, n, b, work.data.ptr,
                            v.data.ptr, tau.data.ptr, index.data.ptr, layout.index.shape[1], g, layout.height,
                            scratch.data.ptr, cupy.cuda.get_current_stream().ptr, workers=workers)
        results.append([cupy.asnumpy(x) for x in (work, v, tau)])
    for other in results[1:]:
        assert all(np.array_equal(x, y) for x, y in zip(results[0], other)), f"seed={seed}"


def test_band_too_wide_for_shared_memory_is_chased_on_the_host(one_rank, seed):
    from solvers import _kernels as native
    b = 192
    code = native.DTYPES["complex128"]
    if native.sb2st_device_fits(b, code, cupy.cuda.Device().id):
        pytest.skip("this GPU gives a block enough shared memory for b = 192 in complex128")
    rng = np.random.default_rng(seed)
    ab = random_band(rng, 230, b, np.complex128)
    d, e, _ = sb2st(cupy.asarray(ab), b, one_rank, False)
    assert "host C++" in one_rank.stats["other"].notes["chase"]
    w = scipy.linalg.eigvalsh_tridiagonal(cupy.asnumpy(d), cupy.asnumpy(e))
    assert np.abs(w - scipy.linalg.eigvalsh(band_to_full(ab))).max() < 1e-10 * np.abs(w).max()


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
@pytest.mark.parametrize("n,ncols", [(64, 1), (65, 7), (200, 64), (777, 130), (1500, 333)])
def test_q2_slot_kernel_against_the_gemms(one_rank, seed, n, ncols, dtype):
    """The fused slot kernel (native/solvers/ormtr_sb2st.h) against the batched GEMMs on one
    chase's reflectors (b = g = 64): the same Q2 y to rounding, the rows and columns past a tile's
    edge included, and Q2 orthogonal, Q2ᴴ B Q2 = T."""
    rng = np.random.default_rng(seed)
    b = 64
    ab = random_band(rng, n, b, dtype)
    d, e, refl = sb2st(cupy.asarray(ab), b, one_rank, True)
    y = _random(rng, (n, ncols), dtype)
    by_kernel = cupy.asnumpy(ormtr_sb2st(refl, cupy.asarray(y), method="kernel", coll=one_rank))
    assert one_rank.stats["other"].notes["q2"] == "fused slot kernel"
    by_gemms = cupy.asnumpy(ormtr_sb2st(refl, cupy.asarray(y), method="gemm"))
    eps = np.finfo(dtype).eps
    assert np.abs(by_kernel - by_gemms).max() < 10 * n * eps * np.abs(y).max(), f"seed={seed}"
    assert np.abs(np.linalg.norm(by_kernel, axis=0) / np.linalg.norm(y, axis=0) - 1).max() < 10 * n * eps
    with pytest.MonkeyPatch.context() as patch:   # V T formed a group at a time: runs of one slot
        patch.setattr(ormtr_sb2st_module, "FACTOR_CHUNK_BYTES", 1)
        in_runs = cupy.asnumpy(ormtr_sb2st(refl, cupy.asarray(y), method="kernel"))
    assert np.abs(in_runs - by_kernel).max() < 10 * n * eps * np.abs(y).max(), f"seed={seed}"
    q = cupy.asnumpy(ormtr_sb2st(refl, cupy.eye(n, dtype=dtype), method="kernel"))
    t = np.diag(cupy.asnumpy(d)) + np.diag(cupy.asnumpy(e), 1) + np.diag(cupy.asnumpy(e), -1)
    big = band_to_full(ab)
    assert np.abs(q.conj().T @ q - np.eye(n)).max() < 10 * n * eps, f"seed={seed}"
    assert np.abs(q.conj().T @ big @ q - t).max() < 10 * n * eps * max(np.abs(big).max(), 1.0), f"seed={seed}"


def test_q2_slot_kernel_is_refused_where_it_does_not_apply(one_rank, seed):
    rng = np.random.default_rng(seed)
    for dtype, b in ((np.float32, 64), (np.float64, 32)):
        _, _, refl = sb2st(cupy.asarray(random_band(rng, 100, b, dtype)), b, one_rank, True)
        with pytest.raises(ValueError, match="kernel"):
            ormtr_sb2st(refl, cupy.eye(100, dtype=dtype), method="kernel")
        ormtr_sb2st(refl, cupy.eye(100, dtype=dtype), coll=one_rank)
        assert one_rank.stats["other"].notes["q2"].startswith("batched GEMMs (the kernel takes")


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("kind, method", [("random", "cholqr2"), ("square", "cholqr2"), ("zero", "geqrf"),
                                          ("rank deficient", "geqrf"), ("wider than tall", "geqrf")])
def test_panel_qr_on_the_device(seed, dtype, kind, method):
    """sy2sb's panel QR with cupy arrays: CholeskyQR2 (the one native call for w <= 64, else
    cuSOLVER's potrf left unread and cuBLAS's trsm) and its Householder reconstruction are a
    Householder QR to working precision; a panel whose first Cholesky breaks down on the device
    is caught by the status or the orthogonality test and goes to geqrf."""
    rng = np.random.default_rng(seed)
    shape = {"square": (64, 64), "wider than tall": (9, 16)}.get(kind, (3000, 64))
    if kind == "zero":
        panel = np.zeros(shape, dtype)
    elif kind == "square":      # a Gaussian square panel is too often ill-conditioned for CholeskyQR2
        panel = panel_with_condition(rng, *shape, 10, dtype)
    else:
        panel = _random(rng, shape, dtype)
    if kind == "rank deficient":
        panel[:, 40] = panel[:, 3]
    device_panel = cupy.asarray(panel)
    *factors, used = panel_qr(cupy, device_panel, "cholqr2")
    assert used == method
    assert np.array_equal(cupy.asnumpy(device_panel), panel)
    errors = householder_qr_errors(panel, *(cupy.asnumpy(f) for f in factors))
    assert errors[3] and max(errors[:3]) < 20 * max(shape), f"seed={seed}: {errors}"


@pytest.mark.parametrize("panel", ["auto", "cholqr2"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_sy2sb_on_the_device(grid, seed, dtype, panel):
    rng = np.random.default_rng(seed)
    n, nb, band = 70, 16, 8
    a = random_symmetric(rng, n, np.dtype(dtype).kind == "c").astype(dtype)
    coll = Collectives(grid, "mpi", cupy)
    c = DistMatrix.from_global(cupy.asarray(a), grid, nb)
    ab, tau = sy2sb(c, coll, band, chunk=24, panel=panel)
    q = ormtr(c, tau, DistMatrix.from_global(cupy.eye(n, dtype=dtype), grid, nb), coll, offset=band)
    q = cupy.asnumpy(q.to_global(coll))
    full = band_to_full(cupy.asnumpy(ab))
    eps = np.finfo(dtype).eps
    assert np.abs(q.conj().T @ a @ q - full).max() < 10 * np.abs(a).max() * n * eps, f"seed={seed}"
    assert np.abs(q.conj().T @ q - np.eye(n)).max() < 10 * n * eps, f"seed={seed}"


@pytest.mark.parametrize("banded", [False, True], ids=["dense", "banded-already"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
def test_sy2sb_reads_its_panels_statuses_once(one_rank, seed, dtype, banded, monkeypatch):
    """One rank on the GPU: the panels' CholeskyQR2 statuses are read once, at the end, and the
    band, tau and reflectors are the bits a read a panel gives; a matrix banded already (its
    panels zero: CholeskyQR2 cannot factor them) fails that check and is reduced again from its
    copy, each panel checked."""
    import solvers.sy2sb as sy2sb_module
    rng = np.random.default_rng(seed)
    n, nb, band = 150, 16, 8
    a = random_symmetric(rng, n, np.dtype(dtype).kind == "c").astype(dtype)
    if banded:
        a[np.abs(np.subtract.outer(np.arange(n), np.arange(n))) >= band] = 0   # each panel's column 0 zero

    def reduce(deferred):
        if not deferred:
            monkeypatch.setattr(sy2sb_module, "_deferred_check", lambda *args: None)
        coll = Collectives(one_rank.grid, "mpi", cupy)
        c = DistMatrix.from_global(cupy.asarray(a), one_rank.grid, nb)
        ab, tau = sy2sb(c, coll, band)
        return coll.stats["other"].notes, [cupy.asnumpy(x) for x in (ab, tau, c.local)]

    notes, got = reduce(True)
    if banded:
        assert notes["panel check"].startswith("deferred: panel 0 failed it"), notes
        assert "geqrf" in notes["panel QR"], notes
    else:   # every panel of at least b rows by CholeskyQR2, unchecked; a shorter last one by geqrf
        panels = sy2sb_module.panel_count(n, band)
        short = sum(n - (p + 1) * band < band for p in range(panels))
        assert notes["panel check"].startswith("deferred (one read"), notes
        assert notes["panel QR"] == f"{panels - short} cholqr2 unchecked" + (f", {short} geqrf" if short else ""), notes
    checked_notes, want = reduce(False)
    assert "panel check" not in checked_notes
    assert all(np.array_equal(x, y) for x, y in zip(got, want)), f"seed={seed}"


@pytest.mark.parametrize("solver", ["auto", "mrrr", "dc"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_two_stage_subsets_on_gpu(grid, seed, dtype, solver):
    """The lowest pairs and a middle index range: Q2 on each rank's whole columns (auto: inverse
    iteration's for these k, on the device; dc: divide and conquer's, on the device; mrrr:
    MRRR's host columns taken to the device), then the Alltoallv, then Q1 on k columns."""
    rng = np.random.default_rng(seed)
    n, nb = 66, 12
    hermitian = np.dtype(dtype).kind == "c"
    a, b = random_symmetric(rng, n, hermitian), spd_with_condition(rng, n, 100.0, hermitian)
    coll = Collectives(grid, "mpi", cupy)
    for il, iu in ((1, 7), (20, 41)):
        da = DistMatrix.from_global(cupy.asarray(with_junk(rng, a.astype(dtype), True)), grid, nb)
        db = DistMatrix.from_global(cupy.asarray(with_junk(rng, b.astype(dtype), True)), grid, nb)
        coll.reset()
        w, z = sygvd(da, db, coll, method="distributed", reduction="2stage", band=6,
                     subset=EigenRange.by_index(il, iu).solved_by(solver))
        assert ("stemr" in coll.stats) == (solver == "mrrr"), set(coll.stats)
        subset = EigenRange.by_index(il, iu).solved_by(solver)
        assert ("stein" in coll.stats) == (choose_subset_solver(subset, iu - il + 1, n, True)[0] == "invit"), set(coll.stats)
        zg = cupy.asnumpy(z.to_global(coll)).astype(wide(dtype))
        eps = float(np.finfo(dtype).eps)
        a64, b64 = a.astype(dtype).astype(wide(dtype)), b.astype(dtype).astype(wide(dtype))
        w_ref = scipy.linalg.eigvalsh(a64, b64)[il - 1:iu]
        tol = 1e-3 if eps > 1e-10 else 1e-9
        assert np.abs(cupy.asnumpy(w) - w_ref).max() < tol * np.abs(w_ref).max(), f"seed={seed}"
        for name, value in eigen_ratios(a64, b64, cupy.asnumpy(w).astype(np.float64), zg, 1, eps).items():
            assert value < THRESHOLD, f"seed={seed}: {name} = {value}"


def test_eigh_two_stage_cupy_in_cupy_out(seed):
    rng = np.random.default_rng(seed)
    n = 90
    a, b = random_symmetric(rng, n, True), spd_with_condition(rng, n, 50.0, True)
    w, z = solvers.eigh(cupy.asarray(a), cupy.asarray(b), nb=32, method="distributed", reduction="2stage")
    assert isinstance(w, cupy.ndarray) and isinstance(z, cupy.ndarray)
    np.testing.assert_allclose(cupy.asnumpy(w), scipy.linalg.eigvalsh(a, b), atol=1e-10)
