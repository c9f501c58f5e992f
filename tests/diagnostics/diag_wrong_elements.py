"""Diagnostic: wrong elements per call for one algorithm, int32 data, poisoned output.

    mpiexec -n 2 python tests/diagnostics/diag_wrong_elements.py SYNC ALGO    (SYNC: sync|nosync)
"""
import sys

import numpy as np
import cupy
from mpi4py import MPI

import hpcolls

W = MPI.COMM_WORLD
cupy.cuda.Device(0).use()
sync = sys.argv[1] == "sync"
algo = sys.argv[2]
c = hpcolls.Communicator(W, algo=algo)
bad_counts = []
for n in (16, 64, 256, 1000, 1000, 4000, 4000, 30000, 1000, 256) * 3:
    inputs = [np.arange(n, dtype=np.int32) * 10 + r * 100000 + 1 for r in range(W.size)]
    x = cupy.asarray(inputs[W.rank])
    y = cupy.full(n, -7, dtype=cupy.int32)
    c.Allreduce(x, y, op=MPI.SUM)
    if sync:
        cupy.cuda.runtime.deviceSynchronize()
    bad_counts.append(int(np.count_nonzero(cupy.asnumpy(y) != sum(inputs))))
print(f"rank {W.rank} {algo} {sys.argv[1]}: total bad {sum(bad_counts)}; per call {bad_counts}", flush=True)
