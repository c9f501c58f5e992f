"""The array backend: numpy on CPU, cupy on GPU, passed around as an ``xp`` module.

cupy is imported only when a GPU run asks for it, so the CPU path (and its tests) never need
it installed. Small dense kernels the stages share (triangular solves, the Cholesky of one
diagonal block) live here so that the numpy/cupy difference is handled in one place.
"""
import numpy as np
import scipy.linalg

from . import host_blas

CUPY_HINT = "install hpcolls[cu13] (cupy-cuda13x)"


def get_cupy():
    """Import cupy, or fail with the install hint instead of a bare ModuleNotFoundError."""
    try:
        import cupy
    except ImportError as exc:
        raise ImportError(f"the GPU path needs cupy: {CUPY_HINT} ({exc})") from exc
    return cupy


def is_cupy_array(x):
    # Looks at the type's module so that a numpy-only process never imports cupy.
    return type(x).__module__.split(".")[0] in ("cupy", "cupyx")


def array_module(x):
    """numpy or cupy, whichever ``x`` belongs to."""
    return get_cupy() if is_cupy_array(x) else np


def module_for_device(device):
    """'cpu' → numpy, 'gpu' → cupy."""
    if device == "cpu":
        return np
    if device == "gpu":
        return get_cupy()
    raise ValueError(f"device must be 'cpu' or 'gpu', got {device!r}")


def is_numpy(xp):
    return xp is np


def device_of(xp):
    """'cpu' for numpy, 'gpu' for cupy: module_for_device's inverse, the key of per-device tables."""
    return "cpu" if is_numpy(xp) else "gpu"


def real_dtype(dtype):
    """float32 for float32 / complex64, float64 for float64 / complex128: the eigenvalues'."""
    return np.zeros((), dtype=dtype).real.dtype


def to_host(x):
    """A numpy view/copy of x (no-op for numpy arrays)."""
    return x.get() if is_cupy_array(x) else np.asarray(x)


def synchronize(xp):
    """Wait for queued device work, so that wall-clock stage timings mean something."""
    if not is_numpy(xp):
        xp.cuda.get_current_stream().synchronize()


def subtract_product(xp, out, a, b, adjoint_b=False):
    """out -= a @ op(b) in place, op(b) = b, or bᴴ where ``adjoint_b``, for 2D operands or batches
    of them (3D). On the GPU, when ``out``,
    a and b are row-major views (unit column stride: blocks of larger C-contiguous arrays; for a
    batch, evenly spaced blocks), one cuBLAS gemm (strided-batched gemm) with beta = 1 writes
    into out where it lies: no temporary of out's size and one pass over it instead of three
    (sy2sb's trailing update, ormtr's and ormtr_sb2st's updates are such blocks)."""
    if is_numpy(xp) or not _gemm_views(out, a, b, -1, 1, adjoint_b=adjoint_b):
        out -= a @ (b.conj().swapaxes(-1, -2) if adjoint_b else b)
    return out


def add_product(xp, out, a, b, adjoint_a=False):
    """out += op(a) @ b in place, op(a) = a, or aᴴ where ``adjoint_a``; on the GPU by one cuBLAS
    gemm reading row-major views where they lie (cupy's matmul copies a non-contiguous operand
    into a contiguous array first: sy2sb's products with blocks of the trailing matrix)."""
    if is_numpy(xp) or not _gemm_views(out, a, b, 1, 1, adjoint_a):
        out += (a.conj().swapaxes(-1, -2) if adjoint_a else a) @ b
    return out


def adjoint_product(xp, v, y):
    """vᴴ @ y, a new array, for 2D operands or batches of them (3D: v h × g and y h × n each). On
    the GPU one cuBLAS gemm reads y where it lies when it is a row-major view (ormtr_sb2st's
    evenly spaced rows of Y), where cupy's matmul would copy it first."""
    if not is_numpy(xp):
        out = xp.empty((*v.shape[:-2], v.shape[-1], y.shape[-1]), dtype=v.dtype)
        if _gemm_views(out, v, y, 1, 0, adjoint_a=True):
            return out
    return v.conj().swapaxes(-1, -2) @ y


def _gemm_views(out, a, b, alpha, beta, adjoint_a=False, adjoint_b=False):
    """cuBLAS out = alpha op(a) @ op(b) + beta out (op(x) = x, or xᴴ where ``adjoint_x``) for
    row-major views, 2D or batches of them (3D); False when the operands do not fit that call,
    or this cupy's cuBLAS binding takes other arguments (nothing ran: the caller takes the plain
    product). out must not overlap a or b: cuBLAS reads them while it writes out (numpy's
    product, which the callers fall back to, makes a temporary first; no caller passes such
    views)."""
    nd = out.ndim
    if nd not in (2, 3) or a.ndim != nd or b.ndim != nd:
        return False
    *batch, m, n = out.shape
    k = b.shape[-1] if adjoint_b else b.shape[-2]
    if not (a.dtype == b.dtype == out.dtype and out.dtype.char in "fdFD"
            and a.shape == ((*batch, k, m) if adjoint_a else (*batch, m, k))
            and b.shape == ((*batch, n, k) if adjoint_b else (*batch, k, n))
            and _row_major_view(out) and _row_major_view(a) and _row_major_view(b)):
        return False
    if out.size == 0:
        return True
    if k == 0:        # an empty sum: out = beta out
        if beta != 1:
            out[...] = out * beta if beta else 0
        return True
    item = out.itemsize

    def operand(x):   # (pointer, leading dimension, batch stride), in elements
        return x.data.ptr, x.strides[-2] // item, x.strides[0] // item if nd == 3 else 0

    # column-major view: outᵀ = alpha op(b)ᵀ op(a)ᵀ + beta outᵀ, each op(x)ᵀ being x's memory read
    # as it is, or conjugate-transposed; the leading dimensions are the row strides
    return _cublas_gemm(out.dtype, "C" if adjoint_b else "N", "C" if adjoint_a else "N", n, m, k, alpha, operand(b),
                        operand(a), beta, operand(out), out.shape[0] if nd == 3 else None)


def _row_major_view(x):
    """Whether cuBLAS can take x (2D, or a batch: 3D) where it lies as row-major matrices: unit
    column stride, every stride whole elements, rows at least a row apart."""
    item = x.itemsize
    return (x.strides[-1] == item and all(stride % item == 0 for stride in x.strides)
            and x.strides[-2] // item >= max(x.shape[-1], 1))


def _cublas_gemm(dtype, op_first, op_second, m, n, k, alpha, first, second, beta, out, count):
    """One cuBLAS gemm in column-major terms, out = alpha op(first) op(second) + beta out, each
    operand (pointer, leading dimension, batch stride) and op "N" or "C"; strided-batched over
    ``count`` matrices, or one gemm where count is None. False when this cupy's cuBLAS binding
    takes other arguments (raised before anything runs)."""
    from cupy_backends.cuda.libs import cublas
    ops = {"N": cublas.CUBLAS_OP_N, "C": cublas.CUBLAS_OP_C}
    alpha, beta = np.array(alpha, dtype=dtype), np.array(beta, dtype=dtype)
    if count is None:
        return _cublas_call(dtype, "gemm", ops[op_first], ops[op_second], m, n, k, alpha.ctypes.data,
                            *first[:2], *second[:2], beta.ctypes.data, *out[:2])
    return _cublas_call(dtype, "gemmStridedBatched", ops[op_first], ops[op_second], m, n, k, alpha.ctypes.data,
                        *first, *second, beta.ctypes.data, *out, count)


def _cublas_call(dtype, routine, *args):
    """cublas.<s|d|c|z><routine>(handle, *args) with scalars read from host memory; False when this
    cupy's binding takes other arguments (raised before anything runs)."""
    from cupy.cuda import device
    from cupy_backends.cuda.libs import cublas
    kind = {"f": "s", "d": "d", "F": "c", "D": "z"}[dtype.char]
    handle = device.get_cublas_handle()
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    try:
        getattr(cublas, kind + routine)(handle, *args)
    except TypeError:
        return False
    finally:
        cublas.setPointerMode(handle, mode)
    return True


def solve_triangular(xp, t, b, lower, trans=False):
    """op(t) x = b for a dense triangular t (only its ``lower``/upper triangle is read);
    op(t) = tᴴ with ``trans`` (tᵀ for real t)."""
    if is_numpy(xp):
        if host_blas.available() and b.dtype == t.dtype and b.dtype.char in "fdFD" and b.size:
            return host_blas.solve_triangular_into(t, np.array(b, order="C"), lower, trans)
        return scipy.linalg.solve_triangular(t, b, lower=lower, trans=2 if trans else 0,
                                             check_finite=False)
    from cupyx.scipy.linalg import solve_triangular as cupy_solve_triangular
    return cupy_solve_triangular(t, b, lower=lower, trans=2 if trans else 0)


def cholesky_lower_whole(xp, a):
    """Lower Cholesky factor of a whole SPD / HPD matrix (only its lower triangle is read) and LAPACK's
    info, in one potrf: LAPACK's for numpy, cuSOLVER's for cupy (its devInfo is LAPACK's info).
    What one rank holding all of B does instead of the block-column loop. The strict upper
    triangle of the result is unspecified: callers keep the lower triangle."""
    if is_numpy(xp) and host_blas.available() and a.dtype.char in "fdFD":
        factor = np.array(a, order="C")
        return factor, host_blas.potrf_lower_into(factor)
    if is_numpy(xp) or a.shape[0] == 0:
        return cholesky_lower(xp, a)
    factor, info = cholesky_lower_queued(xp, a)
    return factor, int(info)


def cholesky_lower_queued(xp, a):
    """cholesky_lower_whole on the GPU without reading its info back: (factor, info as a 0-d
    device array), only queued, so the host does not wait for the device. Where potrf failed the
    factor is garbage from that column on: a caller that does not read the info has to check
    what it computes from the factor instead (panel_qr does)."""
    from cupy.cuda import device
    from cupy_backends.cuda.libs import cublas, cusolver
    # A row-major matrix is its transpose in column-major order, which is what cuSOLVER reads:
    # our lower triangle is its upper one, and the factor U = Lᵀ it leaves there reads back as L.
    # (Hermitian: cuSOLVER factors Aᵀ = conj(A) = Uᴴ U, so A = Uᵀ conj(Uᵀ)ᵀ: the same holds.)
    x = xp.array(a, order="C")
    buffer_size, factor = {
        "f": (cusolver.spotrf_bufferSize, cusolver.spotrf), "d": (cusolver.dpotrf_bufferSize, cusolver.dpotrf),
        "F": (cusolver.cpotrf_bufferSize, cusolver.cpotrf), "D": (cusolver.zpotrf_bufferSize, cusolver.zpotrf),
    }[x.dtype.char]
    n, handle, uplo = x.shape[0], device.get_cusolver_handle(), cublas.CUBLAS_FILL_MODE_UPPER
    lwork = buffer_size(handle, uplo, n, x.data.ptr, n)
    work, info = xp.empty(lwork, x.dtype), xp.zeros((), xp.int32)
    factor(handle, uplo, n, x.data.ptr, n, work.data.ptr, lwork, info.data.ptr)
    return x, info


def solve_lower_adjoint_right(xp, lower, a):
    """X with X Lᴴ = a, a new array (a is left as it is), L the lower triangle of ``lower``
    (square, its strict upper triangle not read): a's rows solved against Lᴴ, as CholeskyQR's
    Q = A R⁻¹ with R = Lᴴ. On the GPU one cuBLAS trsm on a copy of a."""
    if is_numpy(xp):
        return _host_solve_lower_adjoint_right(lower, a)
    return solve_lower_adjoint_right_into(xp, lower, xp.array(a, order="C"))


def _host_solve_lower_adjoint_right(lower, a):
    if _host_blas_takes(lower, a):
        return host_blas.solve_lower_adjoint_right_into(lower, np.array(a, order="C"))
    return scipy.linalg.solve_triangular(lower, a.conj().T, lower=True, check_finite=False).conj().T


def solve_lower_adjoint_right_into(xp, lower, b):
    """b ← b L⁻ᴴ in place (L the lower triangle of ``lower``); b is returned. On the GPU one
    cuBLAS trsm where both are row-major views (blocks of larger C-contiguous arrays)."""
    if is_numpy(xp):
        if _host_blas_takes(lower, b) and host_blas._row_major(b) is not None:
            return host_blas.solve_lower_adjoint_right_into(lower, b)
        b[...] = _host_solve_lower_adjoint_right(lower, b)
    elif b.size and not _cublas_trsm_lower(lower, b, left=False):
        from cupyx.scipy.linalg import solve_triangular as cupy_solve_triangular
        b[...] = cupy_solve_triangular(lower, b.conj().T, lower=True).conj().T
    return b


def solve_lower_into(xp, lower, b):
    """b ← L⁻¹ b in place (L the lower triangle of ``lower``); b is returned. On the GPU one
    cuBLAS trsm where both are row-major views (cupyx's solve copies L, a whole trailing
    triangle in sygst's blocked loop, into column-major order first)."""
    if is_numpy(xp):
        if _host_blas_takes(lower, b) and host_blas._row_major(b) is not None:
            return host_blas.solve_triangular_into(lower, b, lower=True)
        b[...] = scipy.linalg.solve_triangular(lower, b, lower=True, check_finite=False)
    elif b.size and not _cublas_trsm_lower(lower, b, left=True):
        from cupyx.scipy.linalg import solve_triangular as cupy_solve_triangular
        b[...] = cupy_solve_triangular(lower, b, lower=True)
    return b


def _host_blas_takes(t, b):
    """Whether numpy's own BLAS (host_blas) solves with t on b: same BLAS dtype, 2-D, not empty."""
    return (host_blas.available() and t.dtype == b.dtype and b.dtype.char in "fdFD" and b.ndim == 2
            and b.size > 0)


def _cublas_trsm_lower(lower, x, left):
    """x ← L⁻¹ x (``left``) or x L⁻ᴴ in place by one cuBLAS trsm, L the lower triangle of
    ``lower``, both row-major views. In column-major terms x is xᵀ and L is Lᵀ (upper): the left
    solve is xᵀ ← xᵀ (Lᵀ)⁻¹ (from the right), the other xᵀ ← conj(L)⁻¹ xᵀ = ((Lᵀ)ᴴ)⁻¹ xᵀ (from
    the left). False when the operands are not such views, or this cupy's cuBLAS binding takes
    other arguments (raised before anything runs)."""
    from cupy_backends.cuda.libs import cublas
    if not (lower.dtype == x.dtype and x.dtype.char in "fdFD" and lower.ndim == x.ndim == 2
            and _row_major_view(lower) and _row_major_view(x)):
        return False
    item = x.itemsize
    one = np.array(1, dtype=x.dtype)
    rows, width = x.shape
    side, op = (cublas.CUBLAS_SIDE_RIGHT, cublas.CUBLAS_OP_N) if left else (cublas.CUBLAS_SIDE_LEFT, cublas.CUBLAS_OP_C)
    return _cublas_call(x.dtype, "trsm", side, cublas.CUBLAS_FILL_MODE_UPPER, op, cublas.CUBLAS_DIAG_NON_UNIT,
                        width, rows, one.ctypes.data, lower.data.ptr, lower.strides[0] // item,
                        x.data.ptr, x.strides[0] // item)


def cholesky_lower(xp, block):
    """Lower Cholesky factor of one small SPD block and LAPACK's info (0 or failing minor order).

    Runs LAPACK potrf on the host even for cupy input: the block is nb × nb, and potrf's info
    (which leading minor failed) is what the user-facing error has to name; cupy's cholesky
    does not report it.
    """
    if host_blas.available() and block.dtype.char in "fdFD":
        host = np.array(to_host(block), order="C")
        info = host_blas.potrf_lower_into(host)
        return xp.asarray(np.tril(host)), info
    host = np.array(to_host(block), order="F")
    potrf = scipy.linalg.lapack.get_lapack_funcs("potrf", (host,))
    factor, info = potrf(host, lower=1, clean=1, overwrite_a=1)
    if info < 0:
        raise RuntimeError(f"potrf rejected argument {-info}")
    return xp.asarray(factor), int(info)
