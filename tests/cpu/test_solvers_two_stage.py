"""The two-stage reduction's one-rank pieces (#27): sb2st / hb2st (Python reference and the
native host chase) against scipy's banded eigenvalues, with Q2ᴴ B Q2 = T and Q2 unitary; the
native chase bitwise the same for any thread count; the reflector layout (every reflector has one
place; a slot's groups act on disjoint, evenly spaced rows); the batched larft; Q2 applied to some
columns; the choice of reduction and bandwidth."""
import numpy as np
import pytest
import scipy.linalg
from mpi4py import MPI

from solvers.backend import Collectives
from solvers.distributed import ProcessGrid
from solvers.errors import InputError
from solvers.householder import larft
import solvers.ormtr_sb2st as ormtr_sb2st_module
from solvers.ormtr_sb2st import ormtr_sb2st
from solvers import plan
from solvers.plan import band_for, choose_reduction, default_band
from solvers.sb2st import BulgeLayout, BulgeReflectors, sb2st, steps
from solvers.sy2sb import panel_count
from solvers.problems import band_to_full, random_band

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
DTYPE_IDS = ["f32", "f64", "c64", "c128"]
CASES = [(30, 4, 4), (31, 5, 3), (7, 3, 3), (2, 1, 1), (1, 2, 2), (17, 1, 1), (12, 8, 8), (40, 6, 12),
         (5, 9, 9), (64, 8, 8)]


@pytest.fixture(scope="module")
def coll():
    grid = ProcessGrid(MPI.COMM_WORLD.Split(MPI.COMM_WORLD.Get_rank()))
    yield Collectives(grid)
    grid.free()


@pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n,b,g", CASES)
def test_sb2st_tridiagonalizes_the_band(coll, rng, n, b, g, dtype, native):
    if native:
        pytest.importorskip("solvers._kernels", reason="solvers._kernels not built (nvcc at install)")
    ab = random_band(rng, n, b, dtype)
    d, e, refl = sb2st(ab, b, coll, True, group=g, native=native)
    chase = coll.stats["other"].notes["chase"]
    assert chase.startswith("host C++" if native else "python"), chase
    assert d.dtype == e.dtype == np.zeros(1, dtype).real.dtype and d.shape == (n,) and e.shape == (max(n - 1, 0),)
    eps = np.finfo(dtype).eps
    big = band_to_full(ab)
    norm = max(np.abs(big).max(), 1.0)
    w_ref = scipy.linalg.eigvalsh(big.astype(np.complex128 if np.iscomplexobj(big) else np.float64))
    w = scipy.linalg.eigvalsh_tridiagonal(d.astype(np.float64), e.astype(np.float64)) if n > 1 else d
    assert np.abs(w - w_ref).max() < 20 * n * eps * norm
    q = ormtr_sb2st(refl, np.eye(n, dtype=dtype))
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    assert np.abs(q.conj().T @ big @ q - t).max() < 10 * n * eps * norm
    assert np.abs(q.conj().T @ q - np.eye(n)).max() < 10 * n * eps


def test_sb2st_without_vectors_keeps_no_reflectors(coll, rng):
    ab = random_band(rng, 20, 3, np.float64)
    d, e, refl = sb2st(ab, 3, coll, False)
    d_v, e_v, _ = sb2st(ab, 3, coll, True)
    assert refl is None and np.array_equal(d, d_v) and np.array_equal(e, e_v)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
def test_native_chase_is_bitwise_the_same_for_any_thread_count(rng, dtype):
    native = pytest.importorskip("solvers._kernels", reason="solvers._kernels not built (nvcc at install)")
    n, b, g = 157, 7, 5
    ab = random_band(rng, n, b, dtype)
    results = [_native_chase(native, ab, b, g, threads=threads) for threads in (1, 2, 5)]
    for d, e, refl in results[1:]:
        assert np.array_equal(d, results[0][0]) and np.array_equal(e, results[0][1])
        assert np.array_equal(refl.v, results[0][2].v) and np.array_equal(refl.tau, results[0][2].tau)


def _native_chase(native, ab, b, g, real_diagonal=True, **options):
    """(d, e, reflectors) of the band ``ab`` by solvers._kernels.sb2st_host with ``options``
    (``real_diagonal``: the diagonal's imaginary part zeroed first, as sb2st does)."""
    n, dtype = ab.shape[0], ab.dtype
    layout = BulgeLayout.create(n, b, g)
    work = np.zeros((n, 2 * b), dtype=dtype)
    work[:, :b + 1] = ab
    if real_diagonal:
        work[:, 0] = work[:, 0].real
    v = np.zeros((layout.groups, layout.height, g), dtype=dtype)
    tau = np.zeros((layout.groups, g), dtype=dtype)
    native.sb2st_host(native.DTYPES[np.dtype(dtype).name], n, b, work.ctypes.data, v.ctypes.data,
                      tau.ctypes.data, layout.index.ctypes.data, layout.index.shape[1], g, layout.height,
                      **options)
    return work[:, 0].real.copy(), work[:n - 1, 1].real.copy(), BulgeReflectors(layout, v, tau)


@pytest.mark.parametrize("members", [1, 32])
@pytest.mark.parametrize("dtype", [np.complex128, np.complex64], ids=["c128", "c64"])
def test_chase_reads_no_imaginary_part_of_the_diagonal(rng, dtype, members):
    """A Hermitian diagonal is real: the chase (one thread, or a team as a GPU block runs it)
    gives the same bits whatever imaginary parts the band's diagonal holds."""
    native = pytest.importorskip("solvers._kernels", reason="solvers._kernels not built (nvcc at install)")
    n, b, g = 45, 6, 4
    ab = random_band(rng, n, b, dtype)
    ab[:, 0] += 1j * rng.standard_normal(n)
    clean = _native_chase(native, ab, b, g, threads=1, block_threads=members)
    dirty = _native_chase(native, ab, b, g, real_diagonal=False, threads=1, block_threads=members)
    assert np.array_equal(clean[0], dirty[0]) and np.array_equal(clean[1], dirty[1])
    assert np.array_equal(clean[2].v, dirty[2].v) and np.array_equal(clean[2].tau, dirty[2].tau)


@pytest.mark.parametrize("members", [2, 5, 32, 128])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_chase_run_as_a_gpu_block_runs_it(rng, dtype, members):
    """The GPU kernel's decomposition of a step (strided loops over the block's threads, its
    barriers, its sums) on host threads: the same tridiagonal, the same bits run after run."""
    native = pytest.importorskip("solvers._kernels", reason="solvers._kernels not built (nvcc at install)")
    n, b, g = (45 if members < 100 else 21), 6, 4        # (a barrier of 128 host threads is slow)
    ab = random_band(rng, n, b, dtype)
    d, e, refl = _native_chase(native, ab, b, g, threads=1, block_threads=members)
    again = _native_chase(native, ab, b, g, threads=1, block_threads=members)
    assert np.array_equal(d, again[0]) and np.array_equal(refl.v, again[2].v)
    big = band_to_full(ab)
    eps = np.finfo(dtype).eps
    norm = np.abs(big).max()
    q = ormtr_sb2st(refl, np.eye(n, dtype=dtype))
    t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    assert np.abs(q.conj().T @ big @ q - t).max() < 10 * n * eps * norm
    assert np.abs(q.conj().T @ q - np.eye(n)).max() < 10 * n * eps
    serial = _native_chase(native, ab, b, g, threads=1)
    w = scipy.linalg.eigvalsh_tridiagonal(d.astype(np.float64), e.astype(np.float64))
    w_serial = scipy.linalg.eigvalsh_tridiagonal(serial[0].astype(np.float64), serial[1].astype(np.float64))
    assert np.abs(w - w_serial).max() < 20 * n * eps * norm


@pytest.mark.parametrize("n,b,g", [(50, 4, 4), (50, 4, 2), (51, 3, 7), (9, 2, 1), (2, 1, 1), (1, 3, 3)])
def test_layout_gives_every_reflector_a_place_and_slots_disjoint_rows(n, b, g):
    layout = BulgeLayout.create(n, b, g)
    sweeps = max(n - 1, 0)
    groups = {(sig, k) for sig in range(-(-sweeps // g)) for k in range(int(steps(n, b, sig * g)))}
    placed = {(sig, k): int(layout.index[sig, k]) for sig, k in groups}
    assert sorted(placed.values()) == list(range(len(groups))) == list(range(layout.groups))
    assert (layout.index >= 0).sum() == len(groups)
    for slot in range(layout.slots):
        members = sorted((at, sig, k) for (sig, k), at in placed.items()
                         if layout.slot_start[slot] <= at < layout.slot_start[slot + 1])
        rows = [sig * g + 1 + k * b for _, sig, k in members]
        assert rows[0] == layout.slot_row[slot]
        assert all(later - earlier == g + b for earlier, later in zip(rows, rows[1:]))   # h = b+g-1 < g+b
        assert all(sig - k == members[0][1] - members[0][2] for _, sig, k in members)


def test_larft_of_a_batch_is_larft_of_each(rng):
    v = rng.standard_normal((3, 9, 4)) + 1j * rng.standard_normal((3, 9, 4))
    tau = rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))
    tau[1, 2] = 0
    t = larft(np, v, tau)
    for i in range(3):
        np.testing.assert_allclose(t[i], larft(np, v[i], tau[i]), atol=1e-12)


def test_q2_on_some_columns_is_q2_times_them(coll, rng, monkeypatch):
    """Whatever runs of slots the block reflectors' factors are formed in (all at once, one slot
    at a time, a few groups at a time), the same product, bit for bit."""
    n, b = 35, 4
    ab = random_band(rng, n, b, np.complex128)
    _, _, refl = sb2st(ab, b, coll, True)
    q = ormtr_sb2st(refl, np.eye(n))
    y = rng.standard_normal((n, 6))
    whole = ormtr_sb2st(refl, y)
    np.testing.assert_allclose(whole, q @ y, atol=1e-13)
    for chunk in (1, 3 * refl.v[0].nbytes):
        monkeypatch.setattr(ormtr_sb2st_module, "FACTOR_CHUNK_BYTES", chunk)
        assert ormtr_sb2st(refl, y).tobytes() == whole.tobytes(), chunk
    for columns in (1, 4):          # Y's columns in passes of 1, and of 4 (a short last one)
        monkeypatch.setattr(ormtr_sb2st_module, "GEMM_COLUMNS", columns)
        np.testing.assert_allclose(ormtr_sb2st(refl, y), whole, atol=1e-14, err_msg=str(columns))
    assert ormtr_sb2st(refl, np.zeros((n, 0))).shape == (n, 0)


def test_q2_method_is_checked_and_noted(coll, rng):
    """Host arrays take the GEMMs; asking for the GPU kernel there, or for no known method, is an
    error that says why."""
    n, b = 70, 64
    _, _, refl = sb2st(random_band(rng, n, b, np.float64), b, coll, True)
    y = rng.standard_normal((n, 3))
    with pytest.raises(ValueError, match="host arrays"):
        ormtr_sb2st(refl, y, method="kernel")
    with pytest.raises(ValueError, match="method must be one of"):
        ormtr_sb2st(refl, y, method="fast")
    auto = ormtr_sb2st(refl, y, coll=coll)
    assert coll.stats["other"].notes["q2"].startswith("batched GEMMs (")
    assert ormtr_sb2st(refl, y, method="gemm").tobytes() == auto.tobytes()


def test_reduction_choice_and_bandwidth(monkeypatch):
    assert choose_reduction("1stage", 10 ** 6, True)[0] == "1stage"
    assert choose_reduction("2stage", 3, False)[0] == "2stage"
    assert choose_reduction("auto", 100, False)[0] == "1stage"
    # the measured defaults: two-stage from 4096 on a GPU, real and complex; on CPU never
    assert choose_reduction("auto", 4096, True) == ("2stage", "auto: n = 4096 >= 4096 for real data on GPU")
    assert choose_reduction("auto", 4095, True)[0] == "1stage"
    assert choose_reduction("auto", 4096, True, complex_data=True) == (
        "2stage", "auto: n = 4096 >= 4096 for complex data on GPU")
    assert choose_reduction("auto", 10 ** 5, False) == (
        "1stage", "auto: one-stage for real data on CPU (two-stage measured slower there)")
    monkeypatch.setitem(plan.TWO_STAGE_FROM, ("gpu", "real"), 8192)
    assert choose_reduction("auto", 8192, True) == ("2stage", "auto: n = 8192 >= 8192 for real data on GPU")
    assert choose_reduction("auto", 8191, True)[0] == "1stage"
    with pytest.raises(InputError, match="reduction must be one of"):
        choose_reduction("two", 10, False)
    assert band_for(None, 256, True) == 64 and band_for(None, 32, False) == 32 and band_for(None, 37, False) == 1
    assert band_for(8, 256, True) == 8
    with pytest.raises(InputError, match="divisor of the block size nb = 256"):
        band_for(48, 256, True)
    assert default_band(24, 16) == 12
    assert [panel_count(n, 4) for n in (1, 5, 6, 7, 37)] == [0, 0, 1, 1, 8]
