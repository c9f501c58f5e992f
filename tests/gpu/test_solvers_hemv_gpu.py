"""solvers._kernels.hemv_lower, the one-rank local product of sytrd's native column loop: y = A x
from A's lower triangle only (a symv for real types), the imaginary parts of the diagonal
ignored as zhemv ignores them, deterministic. Orders around the 64-row tiles and the strip
lengths the kernel picks (one tile per strip up to ~2900, longer strips beyond)."""
import numpy as np
import pytest

from gpu_required import cupy_with_a_gpu

cupy = cupy_with_a_gpu()
_kernels = pytest.importorskip("solvers._kernels", reason="solvers._kernels not built (nvcc at install)")

DTYPES = [np.float64, np.float32, np.complex128, np.complex64]


def _hemv(a, x, ld):
    m = x.shape[0]
    y = cupy.full(m, np.nan, dtype=a.dtype)   # poisoned: every entry must be written
    work = cupy.full(_kernels.hemv_lower_work_elems(m), np.nan, dtype=a.dtype)
    _kernels.hemv_lower(_kernels.DTYPES[a.dtype.name], cupy.cuda.Device().id, m, a.data.ptr, ld, x.data.ptr,
                        y.data.ptr, work.data.ptr, cupy.cuda.get_current_stream().ptr)
    return y


def _random(rng, shape, dtype):
    x = rng.standard_normal(shape)
    return x + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else x


@pytest.mark.parametrize("dtype", DTYPES, ids=["f64", "f32", "c128", "c64"])
@pytest.mark.parametrize("m", [1, 2, 63, 64, 65, 129, 1000, 3001, 9000])
def test_hemv_lower_reads_only_the_lower_triangle(m, dtype):
    rng = np.random.default_rng()
    ld = m + 3                                   # a strided view, as sytrd's trailing block is
    full = _random(rng, (m, m), dtype)
    full = full + full.conj().T                  # Hermitian: a real diagonal
    stored = np.full((m, ld), np.nan, dtype=full.dtype)   # NaN above the diagonal and in the padding
    stored[:, :m] = np.where(np.tri(m, dtype=bool), full, np.nan)
    if np.dtype(dtype).kind == "c":              # junk the product must not read
        stored[np.arange(m), np.arange(m)] += 1j * rng.standard_normal(m)
    x = _random(rng, m, dtype)
    a_dev, x_dev = cupy.asarray(stored.astype(dtype)), cupy.asarray(x.astype(dtype))
    first = cupy.asnumpy(_hemv(a_dev, x_dev, ld))
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    exact = full.astype(dtype).astype(wide) @ x.astype(dtype).astype(wide)
    eps = float(np.finfo(dtype).eps)
    bound = (4 if np.dtype(dtype).kind == "c" else 2) * m * eps * (np.abs(full) @ np.abs(x))
    error = np.abs(first.astype(wide) - exact)
    assert np.all(error <= bound), f"max error {error.max()} (bound {bound.min()})"
    assert cupy.asnumpy(_hemv(a_dev, x_dev, ld)).tobytes() == first.tobytes(), "not deterministic"


def test_hemv_lower_order_zero_writes_nothing():
    y = cupy.full(1, 7.0)
    _kernels.hemv_lower(_kernels.DTYPES["float64"], cupy.cuda.Device().id, 0, y.data.ptr, 1, y.data.ptr,
                        y.data.ptr, y.data.ptr, cupy.cuda.get_current_stream().ptr)
    assert float(y[0]) == 7.0
