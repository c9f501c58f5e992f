"""sy2sb's panel QR in one native call on the GPU (native/solvers/panel_cholqr2.h, w <= 64) and
its one-block kernels (the first pass's and the w × w part, owner-computes): a Householder QR to
working precision, the same factorization as geqrf's (R up to unit factors of its rows), as the
same steps run on the host, as the cuBLAS / cuSOLVER composition's and as the host's path; the
same bits every run; outputs poisoned first; the geqrf fallback decided as before (first
Cholesky breakdown: status 2, ‖Q₁ᴴQ₁ - I‖_max above the limit: status 1)."""
import numpy as np
import pytest

from solver_gpu import DTYPE_IDS, DTYPES, cupy

from solvers import _kernels as native  # noqa: E402
from solvers.panel_qr import (ORTHOGONALITY_LIMIT, composed_cholqr2, geqrf_panel, native_cholqr2,  # noqa: E402
                              panel_qr)
from solver_testing import (householder_qr_errors, panel_cholqr2_poisoned, panel_with_condition,  # noqa: E402
                            within_eps)


def _random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _stream():
    return dict(device=cupy.cuda.Device().id, stream=cupy.cuda.get_current_stream().ptr)


def _where(x):
    """(array module, pointer of x, the call's device arguments) for a cupy or numpy array."""
    if isinstance(x, np.ndarray):
        return np, x.ctypes.data, {}
    return cupy, x.data.ptr, _stream()


def _one_call(panel):
    """native.panel_cholqr2 on a device panel, or on the host for a numpy one (the same steps
    on the CPU), outputs poisoned first: ((V, T, R, tau) as numpy arrays, status)."""
    xp, _, where = _where(panel)
    return panel_cholqr2_poisoned(xp, panel, **where)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("m, w", [(64, 64), (65, 64), (1000, 64), (3000, 64), (300, 20), (7, 1)])
def test_one_call_is_a_householder_qr(seed, dtype, m, w):
    rng = np.random.default_rng(seed)
    panel = _random(rng, (m, w), dtype) if m >= 3 * w else panel_with_condition(rng, m, w, 10, dtype)
    factors, status = _one_call(cupy.asarray(panel))
    assert status == 0
    orthogonality, residual, t_error, shape_ok = householder_qr_errors(panel, *factors)
    assert shape_ok and max(orthogonality, residual, t_error) < 20 * m, f"seed={seed}"
    r_geqrf = geqrf_panel(np, panel)[2]
    units = np.diag(factors[2]) / np.diag(r_geqrf)
    eps = np.finfo(dtype).eps
    assert np.abs(np.abs(units) - 1).max() < 100 * w * eps, f"seed={seed}"
    assert np.abs(factors[2] - units[:, None] * r_geqrf).max() < 500 * w * eps * np.abs(r_geqrf).max()


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("m", [1000, 16320])
def test_one_call_agrees_with_its_host_steps_the_composition_and_the_host_path(seed, dtype, m):
    """The same factorization as the same steps run on the host, as cuBLAS / cuSOLVER around
    the w × w kernel and as the host's path (LAPACK around the owner grid's step code on the
    CPU), to rounding; 16320 rows: blocks of the tall products take several chunks each."""
    rng = np.random.default_rng(seed)
    panel = _random(rng, (m, 64), dtype)
    factors, status = _one_call(cupy.asarray(panel))
    assert status == 0
    host_steps, host_status = _one_call(panel)
    assert host_status == 0
    composed = [cupy.asnumpy(x) for x in composed_cholqr2(cupy, native, cupy.asarray(panel))]
    host = panel_qr(np, panel, "cholqr2")
    assert host[4] == "cholqr2"
    assert within_eps(factors, host_steps, dtype, 50 * 64), f"seed={seed}"
    assert within_eps(factors, composed, dtype, 200 * 64), f"seed={seed}"
    assert within_eps(factors, host[:4], dtype, 200 * 64), f"seed={seed}"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_one_call_is_the_same_bits_every_run_and_what_panel_qr_takes(seed, dtype):
    rng = np.random.default_rng(seed)
    panel = cupy.asarray(_random(rng, (16320, 64), dtype))
    first, _ = _one_call(panel)
    for _ in range(3):
        again, _ = _one_call(panel)
        assert all(np.array_equal(x, y) for x, y in zip(first, again))
    *by_panel_qr, used = panel_qr(cupy, panel, "cholqr2")
    assert used == "cholqr2"
    assert all(np.array_equal(x, cupy.asnumpy(y)) for x, y in zip(first, by_panel_qr))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_one_call_reads_a_panel_with_a_row_stride(seed, dtype):
    rng = np.random.default_rng(seed)
    wide_rows = cupy.asarray(_random(rng, (2000, 72), dtype))
    strided, status = _one_call(wide_rows[:, 3:67])
    contiguous, _ = _one_call(cupy.ascontiguousarray(wide_rows[:, 3:67]))
    assert status == 0
    assert all(np.array_equal(x, y) for x, y in zip(strided, contiguous))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("kind, statuses", [("zero", {2}), ("rank deficient", {1, 2}), ("ill conditioned", {1, 2})])
def test_one_call_says_when_geqrf_is_to_take_the_panel(seed, dtype, kind, statuses):
    rng = np.random.default_rng(seed)
    m, w = 1000, 64
    if kind == "zero":
        panel = np.zeros((m, w), dtype)
    elif kind == "rank deficient":
        panel = _random(rng, (m, w), dtype)
        panel[:, 40] = panel[:, 3]
    else:
        panel = panel_with_condition(rng, m, w, 1e6 if np.finfo(dtype).eps > 1e-10 else 1e13, dtype)
    device_panel = cupy.asarray(panel)
    assert _one_call(device_panel)[1] in statuses
    assert native_cholqr2(cupy, native, device_panel) is None
    *factors, used = panel_qr(cupy, device_panel, "cholqr2")
    assert used == "geqrf"
    errors = householder_qr_errors(panel, *(cupy.asnumpy(f) for f in factors))
    assert errors[3] and max(errors[:3]) < 20 * m, f"seed={seed}: {errors}"


def _wxw_inputs(rng, m, w, dtype):
    """gram = Q₁ᴴQ₁, Q₁[:w] and L₁ of a random m × w panel, as panel_factors takes them."""
    panel = _random(rng, (m, w), dtype)
    l1 = np.linalg.cholesky(panel.conj().T @ panel)
    q1 = np.linalg.solve(l1, panel.conj().T).conj().T
    return [np.ascontiguousarray(x).astype(dtype) for x in (q1.conj().T @ q1, q1[:w], l1)]


def _panel_factors(arrays, status_on_entry, device):
    """panel_factors on the host (numpy arrays) or the device (cupy copies), out poisoned: (out, status)."""
    xp = cupy if device else np
    gram, q1_top, l1 = (xp.asarray(x) for x in arrays)
    w = gram.shape[0]
    out = xp.full((4 * w + 1, w), np.nan, dtype=gram.dtype)
    scratch = xp.full(native.panel_factors_scratch_elems(w), np.nan, dtype=gram.dtype)
    status = xp.full((), status_on_entry, dtype=np.int32)
    native.panel_factors(native.DTYPES[gram.dtype.name], w,
                         *(_where(x)[1] for x in (gram, q1_top, l1, out, scratch, status)), ORTHOGONALITY_LIMIT,
                         **_where(gram)[2])
    return cupy.asnumpy(out), int(status)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("w", [64, 20, 80], ids=["w64", "w20", "w80 (flat step code)"])
def test_wxw_kernel_agrees_with_the_host(seed, dtype, w):
    rng = np.random.default_rng(seed)
    arrays = _wxw_inputs(rng, 5 * w, w, dtype)
    on_device, status = _panel_factors(arrays, 0, True)
    on_host, host_status = _panel_factors(arrays, 0, False)
    assert status == host_status == 0
    assert within_eps([on_device], [on_host], dtype, 100 * w), f"seed={seed}"
    kept, status = _panel_factors(arrays, 2, True)      # a failed first pass: nothing done
    assert status == 2 and np.all(np.isnan(kept))
    far = [arrays[0] + np.asarray(0.3, dtype)] + arrays[1:]
    kept, status = _panel_factors(far, 0, True)
    assert status == 1 and np.all(np.isnan(kept))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("w", [64, 20])
def test_first_factor_kernel_agrees_with_the_host(seed, dtype, w):
    rng = np.random.default_rng(seed)
    a = _random(rng, (5 * w, w), dtype)
    gram = np.ascontiguousarray(a.conj().T @ a)
    results = []
    for xp in (cupy, np):
        g = xp.asarray(gram)
        l1, r1_inverse = xp.full((w, w), np.nan, dtype=dtype), xp.full((w, w), np.nan, dtype=dtype)
        status = xp.full((), -1, dtype=np.int32)
        native.panel_first_factor(native.DTYPES[np.dtype(dtype).name], w,
                                  *(_where(x)[1] for x in (g, l1, r1_inverse, status)), **_where(g)[2])
        results.append(([cupy.asnumpy(x) for x in (l1, r1_inverse)], int(status)))
    (on_device, status), (on_host, host_status) = results
    assert status == host_status == 0
    assert within_eps(on_device, on_host, dtype, 100 * w), f"seed={seed}"
