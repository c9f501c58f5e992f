"""LAPACK's dstevd callable without the GIL, so that host threads can solve blocks concurrently.

scipy's f2py wrapper (scipy.linalg.lapack.dstevd) holds the GIL for the whole call: two
Python threads run one after the other. The same routine is also exported as a C function
pointer by scipy.linalg.cython_lapack; called through ctypes, which releases the GIL around
foreign calls, it runs in parallel and returns the wrapper's bits (same library, same
workspace sizes).
"""
import ctypes
import functools

import numpy as np


@functools.cache
def _dstevd():
    from scipy.linalg import cython_lapack
    capsule = cython_lapack.__pyx_capi__["dstevd"]
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))
    # void dstevd(char *jobz, int *n, d *d, d *e, d *z, int *ldz, d *work, int *lwork,
    #             int *iwork, int *liwork, int *info): every argument a pointer.
    return ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 11)(address)


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
    _dstevd()(at(jobz), at(order), w.ctypes.data, sub.ctypes.data, z.ctypes.data, at(ldz),
              work.ctypes.data, at(lw), iwork.ctypes.data, at(liw), at(info))
    if info.value:
        raise RuntimeError(f"stevd did not converge (info={info.value})")
    return w, z
