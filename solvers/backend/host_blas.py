"""numpy's own BLAS and LAPACK, for the host stages' hot loops.

numpy and scipy each ship an OpenBLAS with its own thread pool. A loop that calls one between
the other's products wakes both pools, and on a small machine their threads spin against each
other (docs/PERFORMANCE.md#solver-cpu-vs-scipy). numpy's OpenBLAS exports the whole of BLAS and
LAPACK (scipy-openblas builds: ``scipy_dtrsm_64_``, 64-bit integers), so the host stages take
their triangular solves, Cholesky factorizations and symmetric products from it through ctypes,
and every hot loop runs on one pool: the one numpy's matrix products already use.

Row-major arrays are handed over as what they are in column-major terms, their transposes:
a C-contiguous n × k array with row stride ld is the k × n column-major matrix with leading
dimension ld. Where numpy's BLAS cannot be found (numpy built against another BLAS), ``available()``
is False and callers keep scipy's routines.
"""
import ctypes
import functools
import os
import re

import numpy as np

_PREFIX = {"f": "s", "d": "d", "F": "c", "D": "z"}


@functools.cache
def _library():
    """(ctypes library, symbol format, integer type) of numpy's loaded OpenBLAS, or None."""
    numpy_dir = os.path.dirname(os.path.dirname(np.__file__))
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", maps.read())))
    except OSError:
        return None
    for path in paths:
        if not path.startswith(numpy_dir) or "numpy" not in path:
            continue
        lib = ctypes.CDLL(path)
        for form, integer in (("scipy_{}_64_", ctypes.c_int64), ("{}_64_", ctypes.c_int64),
                              ("scipy_{}_", ctypes.c_int32), ("{}_", ctypes.c_int32)):
            if hasattr(lib, form.format("dtrsm")) and hasattr(lib, form.format("dpotrf")):
                return lib, form, integer
    return None


def available():
    return _library() is not None


@functools.cache
def _routine(name):
    lib, form, _ = _library()
    function = getattr(lib, form.format(name))
    function.restype = None
    return function


def _int(value):
    return _library()[2](value)


def integer(value=0):
    """A by-reference integer argument of numpy's BLAS (its own integer width), to be passed by
    ``address`` and updated through ``.value`` by a loop that calls ``routine``s."""
    return _int(value)


def address(obj):
    """The address (a Python int) to pass to a ``routine``: a numpy array's data, a ctypes
    object's own."""
    return _ref(obj)


# What ``routine`` knows: the count of by-reference arguments and of character arguments.
_SIGNATURES = {"gemv": (11, 1), "symv": (10, 1), "hemv": (10, 1), "axpy": (6, 0), "nrm2": (3, 0)}


def routine(name, dtype):
    """numpy's BLAS routine ``name`` for ``dtype`` ("gemv": sgemv … zgemv; "nrm2": snrm2 …
    dznrm2, which returns the norm) as a plain function of its arguments' addresses (Python
    ints), gfortran's hidden character lengths supplied. For loops that call short routines
    thousands of times (sytrd's columns): ``_call`` wraps every argument anew per call, which
    costs more than a short product; here ctypes converts the ints in C."""
    lib, form, _ = _library()
    dtype = np.dtype(dtype)
    prefix = {"F": "sc", "D": "dz"}.get(dtype.char, _PREFIX[dtype.char]) if name == "nrm2" else _PREFIX[dtype.char]
    function = lib[form.format(prefix + name)]   # a fresh object: its argtypes are set here alone
    count, chars = _SIGNATURES[name]
    function.argtypes = [ctypes.c_void_p] * count + [ctypes.c_size_t] * chars
    function.restype = (ctypes.c_float if dtype.char in "fF" else ctypes.c_double) if name == "nrm2" else None
    if not chars:
        return function
    lengths = (1,) * chars
    return lambda *addresses: function(*addresses, *lengths)


def _char(letter):
    return ctypes.c_char(letter.encode())


def _scalar(value, dtype):
    return np.array(value, dtype=dtype)


def _ref(obj):
    """A Fortran by-reference argument: ctypes scalars by address, numpy arrays by data."""
    return obj.ctypes.data if isinstance(obj, np.ndarray) else ctypes.addressof(obj)


def _call(name, *args, chars=0):
    # gfortran's hidden lengths of the character arguments come last (1 each); the C
    # BLAS interface ignores them.
    _routine(name)(*(ctypes.c_void_p(_ref(a)) for a in args), *([ctypes.c_size_t(1)] * chars))


def _row_major(a):
    """Row stride (elements) of a 2-D array whose rows are contiguous, or None."""
    if a.ndim != 2 or a.strides[1] != a.itemsize or a.strides[0] % a.itemsize:
        return None
    return max(a.strides[0] // a.itemsize, a.shape[1], 1)


def solve_triangular_into(t, b, lower, trans=False):
    """b ← op(T)⁻¹ b in place, T the ``lower`` (or upper) triangle of the square t, op(T) = Tᴴ
    with ``trans``; b a row-major view (rows contiguous). One trsm: in column-major terms b is
    Bᵀ (k × n) and t is Tᵀ, so op(T) X = B is Xᵀ op(T)ᵀ = Bᵀ, a solve from the right with the
    stored matrix Tᵀ (op N) or conj(T) = (Tᵀ)ᴴ (op C), whose triangle is the other one."""
    t = np.ascontiguousarray(t)
    n, k = b.shape[0], (b.shape[1] if b.ndim == 2 else 1)
    bb = b if b.ndim == 2 else b.reshape(n, 1)
    ldb, ldt = _row_major(bb), _row_major(t)
    if ldb is None or t.dtype != b.dtype or n == 0 or k == 0:
        raise ValueError("solve_triangular_into: a row-major b of t's dtype")
    one = _scalar(1, b.dtype)
    _call(_PREFIX[b.dtype.char] + "trsm", _char("R"), _char("U" if lower else "L"),
          _char("C" if trans else "N"), _char("N"), _int(k), _int(n), one, t, _int(ldt), bb, _int(ldb),
          chars=4)
    return b


def solve_lower_adjoint_right_into(lower, b):
    """b ← b L⁻ᴴ in place (L the lower triangle of ``lower``), b row-major: in column-major
    terms bᵀ ← (L⁻ᴴ)ᵀ bᵀ = conj(L)⁻¹ bᵀ, a solve from the left with the stored Lᵀ, upper:
    conj(L) = (Lᵀ)ᴴ (op C)."""
    lower = np.ascontiguousarray(lower)
    ldb, ldt = _row_major(b), _row_major(lower)
    if ldb is None or lower.dtype != b.dtype:
        raise ValueError("solve_lower_adjoint_right_into: a row-major b of lower's dtype")
    rows, width = b.shape
    if rows and width:
        one = _scalar(1, b.dtype)
        _call(_PREFIX[b.dtype.char] + "trsm", _char("L"), _char("U"), _char("C"), _char("N"),
              _int(width), _int(rows), one, lower, _int(ldt), b, _int(ldb), chars=4)
    return b


def potrf_lower_into(a):
    """a ← its lower Cholesky factor L (A = L Lᴴ from a's lower triangle), in place, a
    C-contiguous; returns LAPACK's info. In column-major terms a is Aᵀ = conj(A), whose upper
    factorization conj(A) = Uᴴ U leaves U, read back row-major as Uᵀ = L. The strict upper
    triangle of the result is left as it was."""
    n = a.shape[0]
    info = _int(0)
    if n:
        _call(_PREFIX[a.dtype.char] + "potrf", _char("U"), _int(n), a, _int(_row_major(a)), info, chars=1)
    if info.value < 0:
        raise RuntimeError(f"potrf rejected argument {-info.value}")
    return int(info.value)


def hemv_lower(c, v, out):
    """out ← C v for the Hermitian C whose lower triangle is that of the row-major c (its upper
    triangle is not read): one symv / hemv on the stored Cᵀ's upper triangle. For complex C,
    Cᵀ = conj(C), so conj(C) conj(v) = conj(C v) is what hemv gives: out = conj(hemv(conj v))."""
    n = c.shape[0]
    if n == 0:
        return out
    complex_ = np.iscomplexobj(c)
    x = np.ascontiguousarray(v.conj() if complex_ else v)
    one, zero = _scalar(1, c.dtype), _scalar(0, c.dtype)
    name = _PREFIX[c.dtype.char] + ("hemv" if complex_ else "symv")
    _call(name, _char("U"), _int(n), one, c, _int(_row_major(c)), x, _int(1), zero, out, _int(1), chars=1)
    if complex_:
        np.conjugate(out, out=out)
    return out


def her2k_lower_update(c, v, w):
    """C ← C − V Wᴴ − W Vᴴ on the lower triangle of the row-major c only (its strict upper
    triangle is left as it was), V and W row-major n × k: one syr2k / her2k. In column-major
    terms c is conj(C), v and w are Vᵀ, Wᵀ (k × n), and conj(C) − conj(V) Wᵀ − conj(W) Vᵀ is
    C' ← −Aᴴ B − Bᴴ A + C' with A = Vᵀ, B = Wᵀ (trans 'C'; 'T' for real), upper triangle."""
    n, k = v.shape
    if n == 0 or k == 0:
        return c
    complex_ = np.iscomplexobj(c)
    v, w = np.ascontiguousarray(v), np.ascontiguousarray(w)
    minus_one = _scalar(-1, c.dtype)
    one = _scalar(1, c.real.dtype if complex_ else c.dtype)   # her2k's beta is real
    name = _PREFIX[c.dtype.char] + ("her2k" if complex_ else "syr2k")
    _call(name, _char("U"), _char("C" if complex_ else "T"), _int(n), _int(k), minus_one, v, _int(k),
          w, _int(k), one, c, _int(_row_major(c)), chars=2)
    return c
