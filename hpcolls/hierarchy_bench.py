"""The hierarchical path's rows of `python -m hpcolls.bench --hierarchy K` (docs/PERFORMANCE.md,
"Across nodes"), timed in the same run, on the same kind of buffers, as the bench's other rows:

- hier-leaders, hier-slices, hier-auto: Allreduce through the hierarchical path over emulated nodes
  of K ranks (HPCOLLS_NODE_SIZE=K; K=0: the nodes MPI sees), with HPCOLLS_HIERARCHY forcing each
  scheme, or the latency model choosing (hpcolls/hierarchy_model.py). A size whose element count k
  does not divide goes by leaders in the slices row too;
- flat-mpi: the same device buffers through MPI over all ranks (HPCOLLS_ALGO=mpi: directly where MPI
  is CUDA-aware, else staged through host memory), what a communicator over several nodes got
  before the hierarchy;
- the bench's own `auto` row (no emulation: all ranks one node) is the flat native path, the
  upper bound the hierarchy approaches inside a node.

The hierarchical rows go through MPI, so they stay eager under --graph (a capture refuses them).
"""
from mpi4py import MPI

from . import bench

ROWS = {"hier-leaders": "leaders", "hier-slices": "slices", "hier-auto": "auto", "flat-mpi": None}


def callers(args, cupy, count, dtype, inplace):
    """{row: (one call, result array, send array)} as bench.gpu_callers returns them."""
    op = bench.MPI_OPS[args.op]
    out = {}
    for row, scheme in ROWS.items():
        if scheme is None:
            comm = bench.communicator("mpi")
        else:
            comm = bench.communicator("auto", env={"HPCOLLS_NODE_SIZE": str(args.hierarchy),
                                                   "HPCOLLS_HIERARCHY": scheme})
        send = bench.make_data(cupy, count, dtype, MPI.COMM_WORLD.rank)
        recv = send if inplace else cupy.empty_like(send)
        sendarg = MPI.IN_PLACE if inplace else send
        out[row] = (lambda c=comm, s=sendarg, r=recv: c.Allreduce(s, r, op=op), recv, send)
    return out
