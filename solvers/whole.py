"""The whole problem by one library call on one rank: LAPACK (numpy) or cuSOLVER (cupy).

Distribution pays off only when the problem is large for the ranks it is spread over: below
that (one rank, or an order under the measured crossover, method.py), the fastest solve is one
LAPACK ``s/d syevd``, ``c/z heevd``, ``s/d sygvd`` or ``c/z hegvd`` call (on the GPU, cuSOLVER's
potrf, triangular solves and ``syevd``/``heevd`` through cupy) on one rank, the results handed to
the others. Semantics are the distributed drivers': only the ``lower`` / upper triangle of A and
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


def _fortran_copy(x):
    """A Fortran-ordered copy that LAPACK may overwrite, of the matrix whose *other* triangle
    is x's referenced one: the transpose of a C-ordered x is Fortran-ordered at no cost, and the
    conjugate of that transpose (a Hermitian matrix's own value: xᴴ = x) is its complex copy."""
    return x.T.conj() if np.iscomplexobj(x) else x.T.copy(order="F")


def _lapack(a, b, itype, vectors, lower):
    n = a.shape[0]
    name = routine("syevd" if b is None else "sygvd", a.dtype)
    # Passed as their (conjugate) transposes, so the referenced triangle flips: no reordering copy.
    uplo = "U" if lower else "L"
    if b is None:
        driver = scipy.linalg.lapack.get_lapack_funcs(lapack_name("syevd", a.dtype), (a,))
        w, z, info = driver(_fortran_copy(a), compute_v=int(vectors), lower=int(uplo == "L"),
                            overwrite_a=1)
    else:
        driver = scipy.linalg.lapack.get_lapack_funcs(lapack_name("sygvd", a.dtype), (a, b))
        w, z, info = driver(_fortran_copy(a), _fortran_copy(b), itype=itype,
                            jobz="V" if vectors else "N", uplo=uplo, overwrite_a=1, overwrite_b=1)
    if info > n:
        raise NotPositiveDefiniteError(info - n, n)
    if info < 0:
        raise RuntimeError(f"LAPACK {name} rejected argument {-info}")
    if info:
        raise RuntimeError(f"LAPACK {name} did not converge (info={info})")
    return w, (z if vectors else None), f"LAPACK {name}"


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
