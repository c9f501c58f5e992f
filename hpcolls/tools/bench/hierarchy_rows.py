"""The hierarchical path's rows of `python -m hpcolls.bench --hierarchy K` (docs/PERFORMANCE.md,
"Across nodes"), timed in the same run, on the same buffers, as the bench's other rows
(cli.py adds them to --algos):

- hier-leaders, hier-slices: Allreduce through the hierarchical path over emulated nodes of K ranks
  (HPCOLLS_NODE_SIZE=K; K=0: the nodes MPI sees) with HPCOLLS_HIERARCHY forcing the scheme (a size
  whose element count K does not divide goes by leaders in the slices row too);
- hier-auto: every collective of the run on that communicator as the route decides it
  (hpcolls/routes/native.py): Allreduce by the latency model's scheme, Bcast, Reduce and Allgather
  hierarchical, Reduce_scatter and messages past the node kernels on the flat routes (the row's
  route column says which);
- beside them, the bench's own rows: `mpi-device`, the same device buffers through MPI over all
  ranks (what a communicator over several nodes got before the hierarchy), and `auto`, all ranks
  as one node: the flat native path, the upper bound the hierarchy approaches inside a node.

The hierarchical calls' step between the nodes is MPI on the host, so their rows are host-timed, as
calls made outside a graph run (inside one, that step is a host node: hpcolls/hierarchy/host_steps.py).
"""
from . import cases, runners

SCHEMES = {"hier-leaders": "leaders", "hier-slices": "slices", "hier-auto": "auto"}
ALGOS = tuple(SCHEMES)


def caller(node_size, algo, coll, case):
    """As hpcolls.bench.runners.caller, for one of ALGOS over emulated nodes of `node_size` ranks;
    None where the row has no such call (the forced schemes are Allreduce's)."""
    if SCHEMES[algo] != "auto" and coll != "allreduce":
        return None
    comm = runners.communicator("auto", env={"HPCOLLS_NODE_SIZE": str(node_size), "HPCOLLS_HIERARCHY": SCHEMES[algo]})
    return runners.hpcolls_caller(comm, cases.METHOD[coll], case)
