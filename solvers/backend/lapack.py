"""LAPACK's dstevd and dstemr callable without the GIL and without scipy's workspace choices.

scipy's f2py wrappers hold the GIL for the whole call (two Python threads run one after the
other), and its dstemr wrapper allocates an n × n eigenvector array whatever the range asked.
The same routines are also exported as C function pointers by scipy.linalg.cython_lapack; called
through ctypes, which releases the GIL around foreign calls, they run in parallel, return the
wrapper's bits (same library) and take the Z we size: n × m for m wanted eigenvectors.
"""
import ctypes
import functools

import numpy as np


@functools.cache
def _routine(name, nargs):
    """LAPACK ``name`` from scipy.linalg.cython_lapack as a ctypes function of ``nargs``
    pointers (Fortran passes every argument by reference)."""
    from scipy.linalg import cython_lapack
    capsule = cython_lapack.__pyx_capi__[name]
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))
    return ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * nargs)(address)


def stevd_vectors(d, e):
    """(w ascending, Z) of the tridiagonal with diagonal d (n) and off-diagonal e (n-1),
    float64, by dstevd with jobz='V'; Z is Fortran-ordered (Z.T is C-contiguous)."""
    n = d.shape[0]
    w = np.array(d, dtype=np.float64)
    sub = np.zeros(max(n - 1, 1))                 # LAPACK wants max(n-1, 1) entries
    sub[:n - 1] = e
    z = np.empty((n, n), order="F")
    lwork, liwork = 1 + 4 * n + n * n, 3 + 5 * n  # LAPACK's minimum, as scipy's wrapper asks
    work, iwork = np.empty(lwork), np.empty(liwork, dtype=np.intc)
    jobz = ctypes.c_char(b"V")
    order, ldz, lw, liw, info = (ctypes.c_int(v) for v in (n, max(n, 1), lwork, liwork, 0))
    at = ctypes.addressof
    # dstevd(jobz, n, d, e, z, ldz, work, lwork, iwork, liwork, info)
    _routine("dstevd", 11)(at(jobz), at(order), w.ctypes.data, sub.ctypes.data, z.ctypes.data,
                           at(ldz), work.ctypes.data, at(lw), iwork.ctypes.data, at(liw), at(info))
    if info.value:
        raise RuntimeError(f"stevd did not converge (info={info.value})")
    return w, z


def stemr_vectors(d, e, il, iu):
    """(w, Z) of eigenpairs il..iu (1-based, ascending, LAPACK's range 'I') of the tridiagonal
    with diagonal d (n) and off-diagonal e (n-1), float64, by dstemr (MRRR) with jobz='V';
    Z is n × (iu-il+1), Fortran-ordered: only the wanted vectors are ever stored."""
    n = d.shape[0]
    m_want = iu - il + 1
    w_d = np.array(d, dtype=np.float64)
    sub = np.zeros(max(n, 1))                     # dstemr wants n entries (the last is workspace)
    sub[:n - 1] = e
    w = np.empty(max(n, 1))
    z = np.empty((max(n, 1), max(m_want, 1)), order="F")
    isuppz = np.empty(2 * max(m_want, 1), dtype=np.intc)
    lwork, liwork = max(18 * n, 1), max(10 * n, 1)    # LAPACK's minimum for jobz='V'
    work, iwork = np.empty(lwork), np.empty(liwork, dtype=np.intc)
    jobz, rng = ctypes.c_char(b"V"), ctypes.c_char(b"I")
    vl, vu = ctypes.c_double(0.0), ctypes.c_double(0.0)
    ints = [ctypes.c_int(v) for v in (n, il, iu, 0, max(n, 1), max(m_want, 1), 1, lwork, liwork, 0)]
    order, c_il, c_iu, m, ldz, nzc, tryrac, lw, liw, info = ints
    at = ctypes.addressof
    # dstemr(jobz, range, n, d, e, vl, vu, il, iu, m, w, z, ldz, nzc, isuppz, tryrac,
    #        work, lwork, iwork, liwork, info)
    _routine("dstemr", 21)(at(jobz), at(rng), at(order), w_d.ctypes.data, sub.ctypes.data,
                           at(vl), at(vu), at(c_il), at(c_iu), at(m), w.ctypes.data,
                           z.ctypes.data, at(ldz), at(nzc), isuppz.ctypes.data, at(tryrac),
                           work.ctypes.data, at(lw), iwork.ctypes.data, at(liw), at(info))
    if info.value:
        raise RuntimeError(f"stemr failed (info={info.value})")
    if m.value != m_want:
        raise RuntimeError(f"stemr found {m.value} eigenvalues in {il}..{iu}, not {m_want}")
    return w[:m_want], z[:n, :m_want]
