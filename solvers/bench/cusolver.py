"""cuSOLVER's single-GPU sygvd, the peer ``python -m solvers.bench`` times beside solvers.sygvd on
a one-rank GPU run: cusolverDn<t>sygvd / <t>hegvd (<t>sygvdx / <t>hegvdx for a subset, the 64-bit
interface where the 32-bit one's workspace size overflows), called through ctypes on the
libcusolver that cupy loads (the library nvmath-python's cusolverDn bindings call too), so no
extra package is needed on the GPU machine."""
import ctypes

import numpy as np


class CusolverSygvd:
    """cusolverDn<t>sygvd / <t>hegvd on one GPU through ctypes (column-major: our symmetric
    matrices read as themselves, a Hermitian one as its conjugate, which has the same
    eigenvalues and the conjugate eigenvectors)."""

    ROUTINE = {np.dtype(np.float64): "Dsygvd", np.dtype(np.float32): "Ssygvd",
               np.dtype(np.complex64): "Chegvd", np.dtype(np.complex128): "Zhegvd"}
    RANGE = {"A": 1001, "I": 1002, "V": 1003}   # cusolverEigRange_t
    INVALID_VALUE = 3                            # CUSOLVER_STATUS_INVALID_VALUE
    CUDA_DATA_TYPE = {np.dtype(np.float32): 0, np.dtype(np.float64): 1,   # cudaDataType
                      np.dtype(np.complex64): 4, np.dtype(np.complex128): 5}

    def __init__(self, cupy):
        self.cp = cupy
        self.last_routine = None    # what the last solve called, and why when not <t>sygvd
        self.lib = ctypes.CDLL(loaded_library_path(cupy, "libcusolver"))
        self.handle = ctypes.c_void_p()
        self._ok(self.lib.cusolverDnCreate(ctypes.byref(self.handle)), "cusolverDnCreate")

    def _ok(self, status, what):
        if status != 0:
            raise RuntimeError(f"{what} failed with cusolverStatus {status}")

    @classmethod
    def routine(cls, dtype, subset=None):
        """cuSOLVER's name of the call: <t>sygvd, or <t>sygvdx for a subset."""
        return cls.ROUTINE[np.dtype(dtype)] + ("x" if subset is not None else "")

    def solve(self, a, b, jobz, subset=None):
        """Overwrites copies of a, b; returns (w, z or None) as cupy arrays (the subset's k
        eigenpairs with ``subset``, by <t>sygvdx)."""
        cp = self.cp
        n = a.shape[0]
        a, b = a.copy(order="F"), b.copy(order="F")
        w = cp.empty(n, dtype=a.real.dtype)
        t = self.routine(a.dtype, subset)
        stream = cp.cuda.get_current_stream().ptr
        self._ok(self.lib.cusolverDnSetStream(self.handle, ctypes.c_void_p(stream)), "cusolverDnSetStream")
        args = (self.handle, 1, 1 if jobz == "V" else 0)   # itype 1, jobz
        ptr = lambda x: ctypes.c_void_p(x.data.ptr)  # noqa: E731
        shape = (0, n)                                       # lower, n
        selection, meig = (), ctypes.c_int(n)
        if subset is not None:
            real = ctypes.c_double if a.real.dtype == np.float64 else ctypes.c_float
            shape = (self.RANGE[subset.kind], 0, n)
            selection = (real(subset.vl if subset.kind == "V" else 0.0),
                         real(subset.vu if subset.kind == "V" else 0.0),
                         subset.il if subset.kind == "I" else 0, subset.iu if subset.kind == "I" else 0,
                         ctypes.byref(meig))
        lwork = ctypes.c_int()
        info = cp.zeros(1, dtype=np.int32)
        status = getattr(self.lib, f"cusolverDn{t}_bufferSize")(
            *args, *shape, ptr(a), n, ptr(b), n, *selection, ptr(w), ctypes.byref(lwork))
        if status == self.INVALID_VALUE and subset is None:
            self._solve_64(t, jobz, n, a, b, w, info)
        else:
            self._ok(status, f"{t}_bufferSize")
            self.last_routine = t
            work = cp.empty(max(lwork.value, 1), dtype=a.dtype)
            self._ok(getattr(self.lib, f"cusolverDn{t}")(
                *args, *shape, ptr(a), n, ptr(b), n, *selection, ptr(w), ptr(work), lwork.value,
                ptr(info)), t)
        if int(info[0]) != 0:
            raise RuntimeError(f"cuSOLVER {self.last_routine} info = {int(info[0])}")
        k = meig.value
        return w[:k], (a[:, :k] if jobz == "V" else None)

    def _solve_64(self, t, jobz, n, a, b, w, info):
        """All eigenpairs through the 64-bit interface, where <t>sygvd's int workspace size
        overflows: cusolverDnXsygvd where this cuSOLVER has it, else its steps as LAPACK's sygvd
        takes them (Xpotrf; C = L⁻¹ A L⁻ᴴ by two triangular solves, cuBLAS through cupyx, in
        place of sygst; Xsyevd; Z = L⁻ᴴ Y), all column-major in a and b."""
        from cupyx.scipy.linalg import solve_triangular   # cupy's: here, a GPU run only
        why = f"64-bit API: {t}_bufferSize refuses n = {n}, its int workspace size overflows"
        vectors = 1 if jobz == "V" else 0
        lower, wide = 0, ctypes.c_int64(n)
        kind, real = self.CUDA_DATA_TYPE[a.dtype], self.CUDA_DATA_TYPE[w.dtype]
        ptr = lambda x: ctypes.c_void_p(x.data.ptr)  # noqa: E731
        if hasattr(self.lib, "cusolverDnXsygvd"):
            self.last_routine = f"Xsygvd ({why})"
            self._x_call("Xsygvd", (1, vectors, lower, wide), (kind, ptr(a), wide, kind, ptr(b), wide,
                                                                real, ptr(w), kind), info)
            return
        self.last_routine = f"Xpotrf + cuBLAS trsm x2 + Xsyevd + trsm ({why}; this cuSOLVER has no Xsygvd)"
        self._x_call("Xpotrf", (lower, wide), (kind, ptr(b), wide, kind), info)
        if int(info[0]) != 0:
            return
        lfac = b      # L in the lower triangle (column-major), the upper one not referenced
        y = solve_triangular(lfac, a, lower=True, overwrite_b=True)                  # L⁻¹ A
        a[...] = solve_triangular(lfac, y.conj().T, lower=True, overwrite_b=False)   # L⁻¹ (L⁻¹ A)ᴴ
        del y
        self._x_call("Xsyevd", (vectors, lower, wide), (kind, ptr(a), wide, real, ptr(w), kind), info)
        if vectors and int(info[0]) == 0:
            a[...] = solve_triangular(lfac, a, trans="C", lower=True, overwrite_b=False)

    def _x_call(self, name, head, operands, info):
        """cusolverDn<name> of the 64-bit interface: its bufferSize, then the call, with a fresh
        cusolverDnParams."""
        params = ctypes.c_void_p()
        self._ok(self.lib.cusolverDnCreateParams(ctypes.byref(params)), "cusolverDnCreateParams")
        try:
            device_bytes, host_bytes = ctypes.c_size_t(), ctypes.c_size_t()
            self._ok(getattr(self.lib, f"cusolverDn{name}_bufferSize")(
                self.handle, params, *head, *operands, ctypes.byref(device_bytes),
                ctypes.byref(host_bytes)), f"{name}_bufferSize")
            device_work = self.cp.empty(max(device_bytes.value, 1), dtype=np.uint8)
            host_work = ctypes.create_string_buffer(max(host_bytes.value, 1))
            self._ok(getattr(self.lib, f"cusolverDn{name}")(
                self.handle, params, *head, *operands, ctypes.c_void_p(device_work.data.ptr),
                device_bytes, host_work, host_bytes, ctypes.c_void_p(info.data.ptr)), name)
        finally:
            self.lib.cusolverDnDestroyParams(params)

    def close(self):
        self.lib.cusolverDnDestroy(self.handle)


def loaded_library_path(cupy, stem):
    """Path of the shared library ``stem`` that cupy's own binding has loaded in this process."""
    if stem == "libcusolver":
        from cupy_backends.cuda.libs import cusolver  # noqa: F401  (loads libcusolver)
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if f"/{stem}.so" in path:
                return path
    raise RuntimeError(f"{stem} is not loaded by cupy in this process")
