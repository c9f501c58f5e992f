"""Diagnostic: two-shot with int32 data, poisoned output; which chunks are wrong and how."""
import numpy as np
import cupy
from mpi4py import MPI
import hpcolls

W = MPI.COMM_WORLD
cupy.cuda.Device(0).use()
import sys
from hpcolls import _native
MODE = sys.argv[1] if len(sys.argv) > 1 else "cupy-sync"
c = hpcolls.Communicator(W, algo=sys.argv[2] if len(sys.argv) > 2 else "twoshot")
c.Allreduce(MPI.IN_PLACE, cupy.ones(1))
import ctypes
cu = ctypes.CDLL("libcuda.so.1"); cx = ctypes.c_void_p(); cu.cuCtxGetCurrent(ctypes.byref(cx))
print(f"rank {W.rank} mode {MODE}: native ctx {_native.current_context():#x}, libcuda ctx {cx.value or 0:#x}, "
      f"cupy stream {cupy.cuda.get_current_stream().ptr}", flush=True)
for n in (16, 64, 256, 1000, 1000, 4000):
    inputs = [np.arange(n, dtype=np.int32) * 10 + r * 100000 + 1 for r in range(W.size)]
    x = cupy.asarray(inputs[W.rank])
    y = cupy.full(n, -7, dtype=cupy.int32)
    cupy.cuda.runtime.deviceSynchronize()
    c.Allreduce(x, y, op=MPI.SUM)
    if MODE == "native-sync":
        _native.device_synchronize()
    cupy.cuda.runtime.deviceSynchronize()
    got = cupy.asnumpy(y)
    want = sum(inputs)
    bad = np.flatnonzero(got != want)
    chunks = sorted(set(bad // 4))
    print(f"rank {W.rank} n={n}: {len(bad)} bad; chunks {chunks[:12]}; "
          + (f"first bad elem {bad[0]}: got {got[bad[0]]} want {want[bad[0]]} (got-want {got[bad[0]]-want[bad[0]]})" if len(bad) else ""),
          flush=True)
    W.Barrier()
