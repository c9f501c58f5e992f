"""Diagnostic: does every rank's mapping of every peer's scratch reach that peer's memory?
Needs the diagnostic module (HPCOLLS_DIAGNOSTICS=1 at install) for peek/poke."""
import numpy as np
import cupy
from mpi4py import MPI
import hpcolls
from hpcolls import native_module

diagnostics = native_module.load_diagnostics()
peek, poke = diagnostics.peek, diagnostics.poke

W = MPI.COMM_WORLD
cupy.cuda.Device(0).use()
comms = [hpcolls.Communicator(W, algo="oneshot") for _ in range(3)]
for c in comms:
    c.Allreduce(MPI.IN_PLACE, cupy.ones(4))


def poke_scratch(nc, rank, offset, value):
    poke(nc.scratch_address(rank) + offset, value)


def peek_scratch(nc, rank, offset):
    return peek(nc.scratch_address(rank) + offset)


for k, c in enumerate(comms):
    nc = c.native_comm(0)
    poke_scratch(nc, W.rank, 0, 1000 * (k + 1) + W.rank)           # own scratch, offset 0
    W.Barrier()
    seen = [peek_scratch(nc, r, 0) for r in range(W.size)]
    for r in range(W.size):                                      # write into each peer's scratch
        poke_scratch(nc, r, 4096 + 8 * W.rank, 7000 * (k + 1) + 10 * W.rank + r)
    W.Barrier()
    mine = [peek_scratch(nc, W.rank, 4096 + 8 * q) for q in range(W.size)]
    print(f"rank {W.rank} comm {k}: peers' offset0 {seen} (want {[1000*(k+1)+r for r in range(W.size)]}); "
          f"written to me {mine} (want {[7000*(k+1)+10*q+W.rank for q in range(W.size)]})", flush=True)
    W.Barrier()
