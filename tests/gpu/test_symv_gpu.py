"""hpcolls._native.symv_lower, the one-rank local product of sytrd's native column loop: y = A x
from A's lower triangle only, deterministic. Orders around the 64-row tiles and the strip
lengths the kernel picks (one tile per strip up to ~2900, longer strips beyond)."""
import numpy as np
import pytest

cupy = pytest.importorskip("cupy", reason="cupy not installed (pip install hpcolls[cu13])")
_native = pytest.importorskip("hpcolls._native", reason="hpcolls native module not built")

_CODES = {np.float32: 2, np.float64: 3}   # hpcolls.dtypes.F32 / F64


def _symv(a, x, ld):
    m = x.shape[0]
    y = cupy.full(m, np.nan, dtype=a.dtype)   # poisoned: every entry must be written
    work = cupy.full(_native.symv_lower_work_elems(m), np.nan, dtype=a.dtype)
    _native.symv_lower(_CODES[a.dtype.type], cupy.cuda.Device().id, m, a.data.ptr, ld, x.data.ptr, y.data.ptr,
                       work.data.ptr, cupy.cuda.get_current_stream().ptr)
    return y


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("m", [1, 2, 63, 64, 65, 129, 1000, 3001, 9000])
def test_symv_lower_reads_only_the_lower_triangle(m, dtype):
    rng = np.random.default_rng()
    ld = m + 3                                   # a strided view, as sytrd's trailing block is
    full = rng.standard_normal((m, m))
    full = full + full.T
    stored = np.full((m, ld), np.nan)            # NaN above the diagonal and in the padding
    stored[:, :m] = np.where(np.tri(m, dtype=bool), full, np.nan)
    x = rng.standard_normal(m)
    a_dev, x_dev = cupy.asarray(stored.astype(dtype)), cupy.asarray(x.astype(dtype))
    first = cupy.asnumpy(_symv(a_dev, x_dev, ld))
    y = first.astype(np.float64)
    exact = full.astype(dtype).astype(np.float64) @ x.astype(dtype).astype(np.float64)
    eps = float(np.finfo(dtype).eps)
    bound = 2 * m * eps * (np.abs(full) @ np.abs(x))
    assert np.all(np.abs(y - exact) <= bound), f"max error {np.abs(y - exact).max()}"
    assert cupy.asnumpy(_symv(a_dev, x_dev, ld)).tobytes() == first.tobytes(), "not deterministic"


def test_symv_lower_order_zero_writes_nothing():
    y = cupy.full(1, 7.0)
    _native.symv_lower(3, cupy.cuda.Device().id, 0, y.data.ptr, 1, y.data.ptr, y.data.ptr, y.data.ptr,
                       cupy.cuda.get_current_stream().ptr)
    assert float(y[0]) == 7.0
