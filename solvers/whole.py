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
import re

import numpy as np
import scipy.linalg

from .backend.arrays import cholesky_lower_whole, is_numpy, solve_triangular, to_host
from .errors import NotPositiveDefiniteError
from .lapack_names import lapack_name, routine
from .subset import positions


def whole_eig(xp, a, b, itype, vectors, lower, subset=None):
    """(w, Z or None) of the pencil (a, b) (b None: the standard problem), full square arrays
    of ``xp`` held by this rank, never modified; only the eigenpairs of ``subset`` (an
    EigenRange; None: all). On CPU a subset is LAPACK's to find (the drivers scipy.linalg.eigh
    calls for subsets: s/d syevr, c/z heevr; s/d sygvx, c/z hegvx), whose work after the
    reduction scales with its size; on the GPU it is kept from cuSOLVER's full solve.
    Returns (w, z, what ran)."""
    if subset is not None and not subset.is_all:
        if is_numpy(xp):
            return _lapack_subset(a, b, itype, vectors, lower, subset)
        w, z, what = _cusolver(xp, a, b, itype, vectors, lower)
        keep = positions(to_host(w), subset)
        return w[keep], (None if z is None else xp.ascontiguousarray(z[:, keep])), what
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


def _lapack_subset(a, b, itype, vectors, lower, subset):
    """The eigenpairs of ``subset`` by scipy.linalg.eigh's subset drivers (evr for the standard
    problem, or evx where the subset asks for inverse iteration; gvx for the generalized one,
    LAPACK's only); B not positive definite raises
    NotPositiveDefiniteError with potrf's info, as the other drivers do."""
    n = a.shape[0]
    driver = "gvx" if b is not None else "evx" if subset.solver == "invit" else "evr"
    by_index = (subset.il - 1, subset.iu - 1) if subset.kind == "I" else None
    by_value = (subset.vl, subset.vu) if subset.kind == "V" else None
    try:
        result = scipy.linalg.eigh(a, b, lower=lower, eigvals_only=not vectors, type=itype,
                                   check_finite=False, subset_by_index=by_index,
                                   subset_by_value=by_value, driver=driver)
    except np.linalg.LinAlgError as exc:
        minor = re.search(r"leading minor of order (\d+)", str(exc))
        if minor is None:
            raise
        raise NotPositiveDefiniteError(int(minor.group(1)), n) from None
    w, z = (result, None) if not vectors else result
    return w, z, f"LAPACK {routine({'evr': 'syevr', 'evx': 'syevx', 'gvx': 'sygvx'}[driver], a.dtype)}"


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
