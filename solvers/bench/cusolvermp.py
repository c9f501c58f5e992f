"""cuSOLVERMp's distributed ``sygvd`` as a peer of solvers.bench, on the run's own grid.

It needs every rank on its own GPU (it talks over NCCL, which refuses two ranks on one GPU), jobz
V (the only mode cuSOLVERMp's sygvd has), and nvmath-python's cusolverMp bindings with the library
they load (``pip install nvmath-python nvidia-cusolvermp-cu13``; nvmath-python 1.0 binds
cuSOLVERMp 0.7.2 to 0.8.0). ``CusolverMpSygvd.create`` says why when any of that is missing.

It solves on the layout solvers.sygvd uses (the ScaLAPACK descriptor every DistMatrix carries,
ranks row-major over the grid), on Fortran-order copies of the local arrays, since cuSOLVERMp
reads local arrays column-major; the copies are part of the timed solve, as the cuSOLVER peer's
are. Written for N GPUs; run on the GPU machine at one rank (1x1 grid, one H200: docs/PERFORMANCE.md),
not yet with one rank per GPU on several GPUs (no such machine was lent).
"""
import numpy as np

# cudaDataType codes (library_types.h) and the cusolver / cublas enum values sygvd takes.
_CUDA_TYPE = {np.dtype(np.float32): 0, np.dtype(np.float64): 1}   # CUDA_R_32F, CUDA_R_64F
_EIG_TYPE_1, _EIG_MODE_VECTOR, _FILL_LOWER = 1, 1, 0


class CusolverMpSygvd:
    @classmethod
    def create(cls, grid, xp, device, jobz):
        """(peer, None) where cuSOLVERMp can run on this grid, else (None, why). Collective: every
        rank of the grid must call it, and all get the same answer."""
        why = None
        if device != "gpu":
            why = "a CPU run"
        elif jobz != "V":
            why = "jobz N (cuSOLVERMp's sygvd computes eigenvectors only)"
        else:
            try:
                from nvmath.bindings import cusolverMp  # noqa: F401
            except Exception as exc:  # noqa: BLE001 - a missing package or library: not here
                why = (f"nvmath-python's cusolverMp bindings unavailable ({exc.__class__.__name__}: {exc}); "
                       "pip install nvmath-python nvidia-cusolvermp-cu13")
        why = next((w for w in grid.comm.allgather(why) if w), None)
        if why:
            return None, why
        # hpcolls already makes an NCCL communicator from an MPI one, and knows when NCCL cannot
        # run (ranks sharing a GPU): the same serves here.
        from hpcolls import nccl_communicator
        nccl, why_not = nccl_communicator(grid.comm, xp.cuda.Device().id)
        if nccl is None:
            return None, why_not
        return cls(grid, xp, nccl), None

    def __init__(self, grid, xp, nccl):
        from nvmath.bindings import cusolverMp as mp
        self.mp, self.xp, self.grid, self.nccl = mp, xp, grid, nccl
        self.stream = xp.cuda.Stream(non_blocking=True)
        self.handle = mp.create(xp.cuda.Device().id, self.stream.ptr)
        self.mp_grid = mp.create_device_grid(self.handle, nccl.comm, grid.nprow, grid.npcol,
                                             mp.GridMapping.ROW_MAJOR)

    def _desc(self, dm):
        d = dm.desc
        return self.mp.create_matrix_desc(self.mp_grid, _CUDA_TYPE[dm.dtype], d.m, d.n, d.mb, d.nb,
                                          d.rsrc, d.csrc, d.lld)

    def solve(self, a, b):
        """Eigenvalues of A x = λ B x (lower triangles of the DistMatrix a, b), on every rank."""
        xp, mp = self.xp, self.mp
        n = a.shape[0]
        compute = _CUDA_TYPE[a.dtype]
        with self.stream:
            la, lb = xp.asfortranarray(a.local), xp.asfortranarray(b.local)
            lz = xp.empty_like(la, order="F")
            w = xp.empty(n, dtype=a.dtype)
            info = xp.zeros(1, dtype=np.int32)
        descs = [self._desc(a), self._desc(b), self._desc(a)]
        try:
            da, db, dz = descs
            dev_bytes, host_bytes = mp.sygvd_buffer_size(
                self.handle, _EIG_TYPE_1, _EIG_MODE_VECTOR, _FILL_LOWER, n, 1, 1, da, 1, 1, db, 1, 1, dz, compute)
            dev_work = xp.empty(max(dev_bytes, 1), dtype=np.uint8)
            host_work = np.empty(max(host_bytes, 1), dtype=np.uint8)
            mp.sygvd(self.handle, _EIG_TYPE_1, _EIG_MODE_VECTOR, _FILL_LOWER, n, la.data.ptr, 1, 1, da,
                     lb.data.ptr, 1, 1, db, w.data.ptr, lz.data.ptr, 1, 1, dz, compute,
                     dev_work.data.ptr, dev_bytes, host_work.ctypes.data, host_bytes, info.data.ptr)
            self.stream.synchronize()
        finally:
            for d in descs:
                mp.destroy_matrix_desc(d)
        if int(info[0]) != 0:
            raise RuntimeError(f"cuSOLVERMp sygvd info = {int(info[0])} on rank {self.grid.comm.Get_rank()}")
        return w

    def close(self):
        self.mp.destroy_grid(self.mp_grid)
        self.mp.destroy(self.handle)
        self.nccl.destroy()
