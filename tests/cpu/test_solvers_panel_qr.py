"""sy2sb's panel QR (solvers/panel_qr.py): CholeskyQR2 with Householder reconstruction gives a
Householder QR of the panel (H unitary, H [R; 0] = A, T = larft(V, tau): what ormtr rebuilds) to
working precision, the same R as geqrf's up to unit factors of its rows; geqrf takes the panels
CholeskyQR2 cannot be trusted with (rank deficient, too ill-conditioned, wider than tall); the
native w × w part's statuses; sy2sb's stage note says which ran."""
import numpy as np
import pytest
from mpi4py import MPI

from solvers import _kernels
from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.panel_qr import geqrf_panel, panel_qr
from solvers.sy2sb import sy2sb
from solver_testing import (householder_qr_errors, panel_cholqr2_poisoned, panel_with_condition,
                            within_eps)

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
DTYPE_IDS = ["f32", "f64", "c64", "c128"]


def _random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _assert_householder_qr(panel, v, t, r, tau, bound=None):
    m, w = panel.shape
    bound = bound or 20 * max(m, w)
    orthogonality, residual, t_error, shape_ok = householder_qr_errors(panel, v, t, r, tau)
    assert shape_ok
    assert orthogonality < bound and residual < bound and t_error < bound, (orthogonality, residual, t_error)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("m, w", [(300, 16), (64, 64), (65, 64), (200, 64), (7, 1), (400, 80)])
def test_cholqr2_is_a_householder_qr(rng, dtype, m, w):
    # tall Gaussian panels are well-conditioned; square ones often are not (then geqrf, rightly)
    panel = _random(rng, (m, w), dtype) if m >= 3 * w else panel_with_condition(rng, m, w, 10, dtype)
    before = panel.copy()
    v, t, r, tau, method = panel_qr(np, panel)
    assert method == "cholqr2"
    assert np.array_equal(panel, before)
    _assert_householder_qr(panel, v, t, r, tau)
    slack = 100 * np.finfo(dtype).eps      # |x| <= 1 up to rounding: Q's columns are unit vectors
    assert np.all(tau.imag == 0) and np.all((tau.real >= 1) & (tau.real <= 2 + slack))   # pivots 1 + |x|


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_r_is_geqrfs_up_to_unit_factors_of_its_rows(rng, dtype):
    panel = _random(rng, (150, 24), dtype)
    _, _, r, _, method = panel_qr(np, panel)
    _, _, r_geqrf, _ = geqrf_panel(np, panel)
    assert method == "cholqr2"
    units = np.diag(r) / np.diag(r_geqrf)
    eps = np.finfo(dtype).eps
    assert np.abs(np.abs(units) - 1).max() < 100 * eps
    assert np.abs(r - units[:, None] * r_geqrf).max() < 500 * eps * np.abs(r_geqrf).max()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_moderately_ill_conditioned_panel_keeps_cholqr2(rng, dtype):
    cond = 1e2 if np.finfo(dtype).eps > 1e-10 else 1e6   # κ² u well below the 0.1 limit
    panel = panel_with_condition(rng, 120, 16, cond, dtype)
    v, t, r, tau, method = panel_qr(np, panel)
    assert method == "cholqr2"
    _assert_householder_qr(panel, v, t, r, tau)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("kind", ["zero", "rank deficient", "ill conditioned", "wider than tall"])
def test_geqrf_takes_what_cholqr2_cannot(rng, dtype, kind):
    if kind == "zero":
        panel = np.zeros((90, 12), dtype=dtype)
    elif kind == "rank deficient":
        panel = _random(rng, (90, 12), dtype)
        panel[:, 7] = panel[:, 2]
    elif kind == "ill conditioned":
        panel = panel_with_condition(rng, 90, 12, 1e6 if np.finfo(dtype).eps > 1e-10 else 1e13, dtype)
    else:
        panel = _random(rng, (5, 12), dtype)
    v, t, r, tau, method = panel_qr(np, panel)
    assert method == "geqrf"
    _assert_householder_qr(panel, v, t, r, tau)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("w", [20, 64, 80], ids=["w20", "w64", "w80 (flat step code)"])
@pytest.mark.parametrize("gram_kind, status", [("far from I", 1), ("near I, indefinite", 2), ("given", 2)])
def test_native_factors_say_why_they_were_not_made(rng, dtype, w, gram_kind, status):
    """panel_factors' status: 1 where Q₁ᴴQ₁ is not within the limit of I, 2 where it is (entry
    by entry) but its Cholesky factorization breaks down, and a nonzero one on entry (a failed
    first pass) kept; nothing is written to out then."""
    off = {"far from I": 0.3, "near I, indefinite": -0.09 * 20 / w, "given": 0}[gram_kind]
    gram = (np.eye(w) + off * (np.ones((w, w)) - np.eye(w))).astype(dtype)
    q1_top, l1 = _random(rng, (w, w), dtype), np.eye(w, dtype=dtype)
    out = np.full((4 * w + 1, w), 7, dtype=dtype)
    scratch = np.empty(_kernels.panel_factors_scratch_elems(w), dtype=dtype)
    got = np.full((), 2 if gram_kind == "given" else 0, dtype=np.int32)
    _kernels.panel_factors(_kernels.DTYPES[np.dtype(dtype).name], w, gram.ctypes.data, q1_top.ctypes.data,
                           l1.ctypes.data, out.ctypes.data, scratch.ctypes.data, got.ctypes.data, 0.1)
    assert int(got) == status
    assert np.all(out == 7)


def _first_factor(gram):
    """panel_first_factor on the host: (L₁, R₁⁻¹, status), L₁ and R₁⁻¹ poisoned first."""
    w = gram.shape[0]
    l1, r1_inverse = np.full((w, w), 7, dtype=gram.dtype), np.full((w, w), 7, dtype=gram.dtype)
    status = np.full((), -1, dtype=np.int32)
    _kernels.panel_first_factor(_kernels.DTYPES[gram.dtype.name], w, gram.ctypes.data, l1.ctypes.data,
                                r1_inverse.ctypes.data, status.ctypes.data)
    return l1, r1_inverse, int(status)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("w", [1, 20, 64])
def test_first_factor_is_cholesky_and_the_inverse_of_its_adjoint(rng, dtype, w):
    """The first pass's w × w part (panel_cholqr2.h, the GPU's one-call CholeskyQR2): L₁ L₁ᴴ =
    AᴴA, L₁ lower with a positive diagonal, and R₁⁻¹ R₁ = I (R₁ = L₁ᴴ), to working precision."""
    a = _random(rng, (4 * w + 10, w), dtype)
    gram = np.ascontiguousarray(a.conj().T @ a)
    l1, r1_inverse, status = _first_factor(gram)
    eps = np.finfo(dtype).eps
    assert status == 0
    assert np.array_equal(np.triu(l1, 1), np.zeros_like(l1)) and np.all(np.diag(l1).real > 0)
    assert np.array_equal(np.tril(r1_inverse, -1), np.zeros_like(r1_inverse))
    assert np.abs(l1 @ l1.conj().T - gram).max() < 10 * w * eps * np.abs(gram).max()
    assert np.abs(r1_inverse @ l1.conj().T - np.eye(w)).max() < 10 * w * eps * np.linalg.cond(l1)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_first_factor_says_where_cholesky_breaks_down(dtype):
    gram = np.zeros((12, 12), dtype=dtype)
    l1, r1_inverse, status = _first_factor(gram)
    assert status == 2
    assert np.all(l1 == 7) and np.all(r1_inverse == 7)


def test_first_factor_is_for_panels_up_to_64_wide():
    assert _kernels.PANEL_CHOLQR2_MAX_WIDTH == 64
    with pytest.raises(ValueError, match="width 65"):
        _first_factor(np.eye(65))


def _one_call(panel):
    """The GPU's one-call steps run on the host: ((V, T, R, tau), status)."""
    return panel_cholqr2_poisoned(np, panel)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("m, w", [(64, 64), (65, 64), (300, 64), (1000, 64), (300, 16), (7, 1)])
def test_one_call_steps_are_the_host_paths_householder_qr(rng, dtype, m, w):
    """panel_cholqr2.h's steps (the GPU's one call: tall passes by chunks of 64 rows, partial
    sums a block, R₁⁻¹ formed): a Householder QR, the host path's factorization to rounding."""
    panel = _random(rng, (m, w), dtype) if m >= 3 * w else panel_with_condition(rng, m, w, 10, dtype)
    factors, status = _one_call(panel)
    assert status == 0
    _assert_householder_qr(panel, *factors)
    *host, used = panel_qr(np, panel, "cholqr2")
    assert used == "cholqr2"
    assert within_eps(factors, host, dtype, 200 * w)


@pytest.mark.parametrize("dtype", [np.float64, np.complex64], ids=["f64", "c64"])
def test_one_call_steps_with_several_chunks_a_block(rng, dtype):
    # 129 chunks of 64 rows over kPanelTallBlocks = 128 blocks: the first takes two
    panel = _random(rng, (129 * 64 - 5, 64), dtype)
    factors, status = _one_call(panel)
    assert status == 0
    *host, _ = panel_qr(np, panel, "cholqr2")
    assert within_eps(factors, host, dtype, 200 * 64)
    assert all(np.array_equal(x, y) for x, y in zip(factors, _one_call(panel)[0]))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_one_call_steps_read_a_row_stride(rng, dtype):
    wide_rows = _random(rng, (300, 72), dtype)
    strided, status = _one_call(wide_rows[:, 3:67])
    assert status == 0
    assert all(np.array_equal(x, y) for x, y in zip(strided, _one_call(np.ascontiguousarray(wide_rows[:, 3:67]))[0]))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("kind, statuses", [("zero", {2}), ("rank deficient", {1, 2}), ("ill conditioned", {1, 2})])
def test_one_call_steps_say_when_geqrf_is_to_take_the_panel(rng, dtype, kind, statuses):
    if kind == "zero":
        panel = np.zeros((200, 64), dtype=dtype)
    elif kind == "rank deficient":
        panel = _random(rng, (200, 64), dtype)
        panel[:, 40] = panel[:, 3]
    else:
        panel = panel_with_condition(rng, 200, 64, 1e6 if np.finfo(dtype).eps > 1e-10 else 1e13, dtype)
    assert _one_call(panel)[1] in statuses


@pytest.fixture(scope="module")
def coll():
    grid = ProcessGrid(MPI.COMM_WORLD.Split(MPI.COMM_WORLD.Get_rank()))
    yield Collectives(grid)
    grid.free()


@pytest.mark.parametrize("banded, panel", [(False, "auto"), (True, "auto"), (False, "geqrf")],
                         ids=["dense", "banded already", "geqrf asked"])
def test_sy2sb_notes_which_factorization_ran(rng, coll, banded, panel):
    n, b = 60, 4
    a = _random(rng, (n, n), np.float64)
    a = a + a.T
    if banded:      # within b - 1 of the diagonal: each panel's first column is zero
        a = np.triu(np.tril(a, b - 1), 1 - b)
    c = DistMatrix.from_global(a.copy(), coll.grid, nb=8)
    coll.reset()
    ab, _ = sy2sb(c, coll, b, panel=panel)
    notes = {k: v for stats in coll.stats.values() for k, v in stats.notes.items()}
    panels = -(-(n - b - 1) // b)
    assert notes["panel QR"] == (f"{panels} geqrf" if banded or panel == "geqrf" else f"{panels} cholqr2")
    band = np.zeros((n, n))
    for d in range(b + 1):
        band[np.arange(d, n), np.arange(n - d)] = ab[:n - d, d]
    band = band + np.tril(band, -1).T
    assert np.allclose(np.linalg.eigvalsh(band), np.linalg.eigvalsh(a), atol=1e-10 * np.abs(a).max())


def test_auto_is_cholqr2_on_the_cpu(rng):
    assert panel_qr(np, _random(rng, (50, 8), np.float64))[4] == "cholqr2"


def test_unknown_panel_method_is_refused():
    with pytest.raises(ValueError, match="geqrf"):
        panel_qr(np, np.ones((8, 2)), "householder")


def test_bench_panel_qr_runs_on_the_cpu(capsys):
    from solvers.bench import panel_qr as bench_panel_qr
    assert bench_panel_qr.main(["--device", "cpu", "--m", "100", "--w", "8", "--repeat", "1",
                                "--dtype", "float64", "complex64"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| float64 | 100 ")
            or line.startswith("| complex64 | 100 ")]
    assert len(rows) == 2 and all("w×w" in row for row in rows)
