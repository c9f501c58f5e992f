"""Diagnostic: are hpcolls kernels ordered after cupy work on the same stream? (one process)

A cupy kernel spins ~0.3 s and then writes x = 7; hpcolls (COMM_SELF, copy) then computes y from
x on the same stream. y = 7 means ordered; y = 0 means our kernel ran before cupy's finished.
"""
import cupy
from mpi4py import MPI

import hpcolls
from hpcolls import native_module

spin = cupy.RawKernel(r'''
extern "C" __global__ void spin_then_set(double* x, int n, long long cycles, double v) {
  long long t0 = clock64();
  while (clock64() - t0 < cycles) {}
  for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] = v;
}''', "spin_then_set")
import ctypes
cu = ctypes.CDLL("libcuda.so.1")
cx = ctypes.c_void_p()
c = hpcolls.Communicator(MPI.COMM_SELF)
c.Allreduce(MPI.IN_PLACE, cupy.ones(1))
cu.cuCtxGetCurrent(ctypes.byref(cx))
print(f"contexts: native {native_module.load().current_context():#x} libcuda(current) {cx.value or 0:#x}", flush=True)
for name, stream in (("null stream", cupy.cuda.Stream.null), ("cupy non-blocking stream", cupy.cuda.Stream(non_blocking=True)),
                     ("cupy blocking stream", cupy.cuda.Stream())):
    with stream:
        x = cupy.zeros(1000)
        y = cupy.full(1000, -1.0)
        stream.synchronize()
        spin((1,), (128,), (x, cupy.int32(1000), cupy.int64(600_000_000), cupy.float64(7.0)))
        c.Allreduce(x, y, op=MPI.SUM)
        stream.synchronize()
        print(f"{name} (ptr {stream.ptr}): y[0] = {float(y[0])} ({'ORDERED' if float(y[0]) == 7.0 else 'NOT ORDERED'})", flush=True)
