"""The bulge chasing of sb2st.py in solvers._kernels (native/solvers/sb2st*.cu): on the host
(C++ threads, as many as this rank's BLAS threads) for numpy runs, on the GPU (one kernel, a
thread block per sweep in flight) for cupy runs; on the host too for a GPU run whose bandwidth
needs more shared memory than the GPU gives a block. ``chase`` returns (True, what ran) or
(False, why not), and then sb2st runs its Python steps."""
import numpy as np

from .backend.arrays import is_numpy, to_host
from .backend.threads import blas_threads_lent
from .kernels import kernels

# The GPU kernel's block size, band 64: the fastest of those timed (python -m solvers.bench.sb2st,
# docs/PERFORMANCE.md#solver-chase-threads); every size gives the same d and e to the bit.
THREADS_PER_BLOCK = 768
WAIT_TIMEOUT_S = 10.0     # longest a GPU worker waits for the sweep before its own


def chase(work, layout, v, tau, coll, threads_per_block=None):
    """Chase the band ``work`` (n × 2b, on the run's backend) in place, the reflectors into
    ``v``, ``tau`` (None: not kept); ``threads_per_block``: the GPU kernel's (default
    THREADS_PER_BLOCK; solvers.bench.sb2st compares them)."""
    threads_per_block = threads_per_block or THREADS_PER_BLOCK
    native, why = kernels()
    if native is None:
        return False, f"python ({why})"
    code = native.DTYPES[work.dtype.name]
    if is_numpy(coll.xp):
        return True, _host(native, code, work, layout, v, tau)
    xp = coll.xp
    device = xp.cuda.Device().id
    if not native.sb2st_device_fits(layout.band, code, device):
        host = [None if x is None else to_host(x).copy() for x in (work, v, tau)]
        how = _host(native, code, host[0], layout, host[1], host[2])
        for device_array, host_array in zip((work, v, tau), host):
            if device_array is not None:
                device_array[...] = xp.asarray(host_array)
        need = native.sb2st_shared_bytes(layout.band, code)
        return True, f"{how}: a GPU block would need {need} bytes of shared memory"
    index = xp.asarray(layout.index)
    scratch = xp.empty(native.sb2st_device_work_bytes(layout.n), dtype=np.uint8)
    native.sb2st_device(dtype=code, device=device, n=layout.n, band=layout.band, work=work.data.ptr,
                        v=0 if v is None else v.data.ptr, tau=0 if tau is None else tau.data.ptr,
                        index=index.data.ptr, kmax=layout.index.shape[1], group=layout.group,
                        height=layout.height, scratch=scratch.data.ptr,
                        stream=xp.cuda.get_current_stream().ptr, threads_per_block=threads_per_block,
                        timeout_s=WAIT_TIMEOUT_S)
    return True, f"GPU kernel ({threads_per_block} threads per sweep in flight)"


def _host(native, code, work, layout, v, tau):
    index = np.ascontiguousarray(layout.index, dtype=np.int64)
    with blas_threads_lent() as threads:
        native.sb2st_host(dtype=code, n=layout.n, band=layout.band, work=work.ctypes.data,
                          v=0 if v is None else v.ctypes.data, tau=0 if tau is None else tau.ctypes.data,
                          index=index.ctypes.data, kmax=layout.index.shape[1], group=layout.group,
                          height=layout.height, threads=threads)
    return f"host C++ ({threads} threads)"
