"""The whole problem by one library call on one rank: LAPACK (numpy) or cuSOLVER (cupy).

Distribution pays off only when the problem is large for the ranks it is spread over: below
that (one rank, or an order under the measured crossover, plan.py), the fastest solve is one
LAPACK ``s/d syevd``, ``c/z heevd``, ``s/d sygvd`` or ``c/z hegvd`` call (on the GPU, cuSOLVER's
potrf, triangular solves and ``syevd``/``heevd`` through cupy) on one rank, the results handed to
the others. On CPU the call is made as scipy.linalg.eigh makes it with drivers 'gvd' / 'evd'
(same wrapper, arguments and workspace), so the results are scipy's bit for bit. Semantics are
the distributed drivers': only the ``lower`` / upper triangle of A and
B is read, the imaginary parts of their diagonals are ignored (LAPACK's c/z routines do not read
them), a B that is not positive definite raises NotPositiveDefiniteError with potrf's info.
"""
import numpy as np
import scipy.linalg

from .backend.arrays import cholesky_lower_whole, is_numpy, solve_triangular
from .errors import NotPositiveDefiniteError
from .lapack_names import lapack_name, routine


def whole_eig(xp, a, b, itype, vectors, lower):
    """(w, Z or None) of the pencil (a, b) (b None: the standard problem), full square arrays
    of ``xp`` held by this rank, never modified. Returns (w, z, what ran)."""
    if is_numpy(xp):
        return _lapack(a, b, itype, vectors, lower)
    return _cusolver(xp, a, b, itype, vectors, lower)


def referenced_finite(xp, x, lower):
    """True if the ``lower`` (or upper) triangle of the square array x is finite (the other
    triangle may hold anything)."""
    if bool(xp.isfinite(x).all()):
        return True
    keep = xp.tril(xp.ones(x.shape, dtype=bool)) if lower else xp.triu(xp.ones(x.shape, dtype=bool))
    return bool(xp.all(xp.isfinite(x) | ~keep))


def _lapack(a, b, itype, vectors, lower):
    """The LAPACK driver called as scipy.linalg.eigh calls it (driver 'evd' / 'gvd': the same
    wrapper, arguments and copies), so the results are scipy's, bit for bit."""
    n = a.shape[0]
    name = routine("syevd" if b is None else "sygvd", a.dtype)
    if b is None:
        stem = lapack_name("syevd", a.dtype)
        driver, query = scipy.linalg.lapack.get_lapack_funcs((stem, stem + "_lwork"), (a,))
        w, z, info = driver(a, compute_v=int(vectors), lower=int(lower),
                            **_workspace(query, stem, n, compute_v=int(vectors), lower=int(lower)))
    else:
        driver = scipy.linalg.lapack.get_lapack_funcs(lapack_name("sygvd", a.dtype), (a, b))
        w, z, info = driver(a, b, itype=itype, jobz="V" if vectors else "N", uplo="L" if lower else "U")
    if info > n:
        raise NotPositiveDefiniteError(info - n, n)
    if info < 0:
        raise RuntimeError(f"LAPACK {name} rejected argument {-info}")
    if info:
        raise RuntimeError(f"LAPACK {name} did not converge (info={info})")
    return w, (z if vectors else None), f"LAPACK {name}"


# The workspace arguments of the lwork queries, in the order they return them.
_WORKSPACE = {"syevd": ("lwork", "liwork"), "heevd": ("lwork", "liwork", "lrwork")}


def _workspace(query, stem, n, **args):
    """The optimal workspace LAPACK reports, as scipy.linalg.eigh asks for it (single
    precision sizes rounded up past their float32 rounding, as scipy does)."""
    *sizes, info = query(n, **args)
    if info:
        raise RuntimeError(f"LAPACK {stem} workspace query failed (info={info})")
    single = query.dtype in (np.float32, np.complex64)
    return {name: int(np.nextafter(np.float32(size.real), np.float32(np.inf)) if single else size.real)
            for name, size in zip(_WORKSPACE[stem], sizes)}


def _hermitian(xp, x, lower):
    """The full Hermitian matrix of x's referenced triangle, with the real part of its diagonal."""
    strict = xp.tril(x, -1) if lower else xp.triu(x, 1)
    full = strict + strict.conj().T
    full[xp.arange(x.shape[0]), xp.arange(x.shape[0])] = xp.diagonal(x).real
    return full


def _cusolver(xp, a, b, itype, vectors, lower):
    """cuSOLVER through cupy: B = L Lᴴ by one potrf (its info is LAPACK's), C by two triangular
    solves (itype 1) or products (2, 3), then one syevd / heevd of C, then one triangular solve
    or product for the eigenvectors."""
    n = a.shape[0]
    c = _hermitian(xp, a, lower)
    what = f"cuSOLVER {routine('syevd', a.dtype)}"
    lfac = None
    if b is not None:
        lfac, info = cholesky_lower_whole(xp, _hermitian(xp, b, lower))
        if info:
            raise NotPositiveDefiniteError(info, n)
        lfac = xp.tril(lfac)
        if itype == 1:   # L⁻¹ (L⁻¹ A)ᴴ = L⁻¹ A L⁻ᴴ
            c = solve_triangular(xp, lfac, solve_triangular(xp, lfac, c, lower=True).conj().T, lower=True)
        else:            # Lᴴ A L
            c = lfac.conj().T @ (c @ lfac)
        what = f"cuSOLVER potrf + {routine('syevd', a.dtype)} (itype {itype})"
    if not vectors:
        return xp.linalg.eigvalsh(c, UPLO="L"), None, what
    w, y = xp.linalg.eigh(c, UPLO="L")
    if lfac is None:
        return w, y, what
    z = lfac @ y if itype == 3 else solve_triangular(xp, lfac, y, lower=True, trans=True)
    return w, z, what
