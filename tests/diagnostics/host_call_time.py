"""Diagnostic: what a call on host buffers costs through hpcolls against plain mpi4py, one process.

    python tests/diagnostics/host_call_time.py [CALLS]

For Allreduce and Bcast of one float64 on COMM_SELF, the median over 7 rounds of the µs per call
of CALLS calls (default 100000), through hpcolls.wrap(MPI.COMM_SELF) and through mpi4py's
COMM_SELF, and the difference: the host path's cost above mpi4py's.
Run it from each of two trees with that tree on PYTHONPATH to compare them.
"""
import statistics
import sys
import timeit

import numpy as np
from mpi4py import MPI

import hpcolls

calls = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
x, y = np.ones(1), np.empty(1)
wrapped, plain = hpcolls.wrap(MPI.COMM_SELF), MPI.COMM_SELF
cases = {"Allreduce": lambda c: (lambda: c.Allreduce(x, y)), "Bcast": lambda c: (lambda: c.Bcast(x, 0))}
print(f"# hpcolls from {hpcolls.__file__}; {calls} calls x 7 rounds, median us per call")
for name, make in cases.items():
    us = {}
    for who, comm in (("hpcolls", wrapped), ("mpi4py", plain)):
        call = make(comm)
        call()
        us[who] = statistics.median(timeit.repeat(call, number=calls, repeat=7)) / calls * 1e6
    print(f"{name:<10} hpcolls {us['hpcolls']:.3f}  mpi4py {us['mpi4py']:.3f}  above mpi4py {us['hpcolls'] - us['mpi4py']:.3f}")
