"""Diagnostic (not a test): run AllReduce sequences and print where results go wrong.

    mpiexec -n 2 python tests/gpu/diag_allreduce.py
"""
import numpy as np
import cupy
from mpi4py import MPI

import hpcolls

W = MPI.COMM_WORLD
cupy.cuda.Device(0).use()


def run(comm, counts, dtype, tag):
    history = []
    for k, n in enumerate(counts):
        inputs = [(np.random.default_rng([k, r, n]).standard_normal(n) * 100).astype(dtype) for r in range(W.size)]
        x = cupy.asarray(inputs[W.rank])
        y = cupy.empty_like(x)
        if MODE == "sync":
            cupy.cuda.runtime.deviceSynchronize()
        comm.Allreduce(x, y, op=MPI.SUM)
        if MODE == "sync":
            cupy.cuda.runtime.deviceSynchronize()
        got = cupy.asnumpy(y)
        want = inputs[0].copy()
        for r in range(1, W.size):
            want = (want + inputs[r]).astype(dtype)
        history.append(inputs)
        bad = np.flatnonzero(got != want)
        bad_any = W.allreduce(len(bad))
        if bad_any and comm._native is not None and MODE == "sync":
            nc = comm._native
            i = W.bcast(int(bad[0]) if len(bad) else None, root=0) if True else None
            if i is None:
                i = 0
            item = np.dtype(dtype).itemsize
            chunks = (n * item + 15) // 16
            c = i * item // 16
            e = nc.host_epoch
            half_bytes = nc.scratch_bytes // 2
            peer = 1 - W.rank
            lines = []
            for h in (e & 1, 1 - (e & 1)):
                base = h * half_bytes + (peer * chunks + c) * 32
                words = [nc.debug_peek(W.rank, base + 8 * w) for w in range(4)]
                lines.append((h, [(w >> 32, np.uint32(w & 0xFFFFFFFF).view(np.float32 if item == 4 else np.uint32)) for w in words]))
            sent = inputs[W.rank][(i // (16 // item)) * (16 // item):][:16 // item]
            print(f"   rank {W.rank} epoch {e} chunk {c}: my slot-{peer} lines (half, [(flag, data)]) {lines}; "
                  f"I sent chunk {c} = {sent}", flush=True)
        if len(bad) and W.rank == 0:
            i = bad[0]
            recv = got[i] - inputs[0][i]
            stale = [j for j, h in enumerate(history) if i < len(h[1]) and h[1][i] == recv]
            print(f"   received {recv} from rank 1 at element {i}; equals rank 1's input of calls {stale}", flush=True)
            chunks = sorted(set((bad * np.dtype(dtype).itemsize) // 16))
            print(f"{tag} call {k} n={n}: {len(bad)} bad, chunks {chunks[:20]}", flush=True)
            i = bad[0]
            print(f"   got {got[i]} want {want[i]} inputs {[inp[i] for inp in inputs]}", flush=True)
    W.Barrier()


import os
import sys
MODE = sys.argv[1] if len(sys.argv) > 1 else "plain"
if W.rank == 0:
    print(f"mode {MODE}: cupy current stream ptr {cupy.cuda.get_current_stream().ptr}", flush=True)
stream = cupy.cuda.Stream(non_blocking=True) if MODE == "stream" else cupy.cuda.Stream.null
stream.use()
for algo in ("oneshot", "twoshot"):
    c = hpcolls.Communicator(W, algo=algo)
    run(c, [1000] * 5, np.float16, f"{algo} fp16 1000x5")
    run(c, [1000] * 5, np.float32, f"{algo} fp32 1000x5")
    run(c, [127, 1000, 1000, 127, 1000, 4000, 4000, 100000], np.float32, f"{algo} fp32 mixed")
    run(c, [64, 128, 256, 512, 1024, 2048], np.float64, f"{algo} fp64 pow2")
    c.close()
if W.rank == 0:
    print("diag done", flush=True)
