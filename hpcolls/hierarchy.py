"""The node structure of a communicator: which ranks share a node, per-node and across-node groups.

Nodes come from `comm.Split_type(MPI.COMM_TYPE_SHARED)`, or, with `HPCOLLS_NODE_SIZE=k`, from
consecutive groups of k ranks of `comm` (emulated nodes on one host). Nodes are numbered by their
lowest rank in `comm`; inside a node ranks keep their `comm` order (local index). Nodes of unequal
size are allowed (an MPI job may place different rank counts on its nodes); the inter-node group of
local index i then holds only the nodes that have an i-th rank.

Fixed reduction order over the hierarchy (what `reduce_in_hierarchy_order` computes on the host):
first inside each node, left to right in local-index order; then the node partial sums, left to
right in node order. It is not flat rank order 0..N-1 in general, but it is the same on every rank.
"""
from dataclasses import dataclass
from functools import reduce

from mpi4py import MPI

from . import settings


@dataclass
class NodeHierarchy:
    source: str        # "SHARED" or "HPCOLLS_NODE_SIZE"
    nodes: list        # per node, the comm ranks on it, ascending
    node_index: int    # this rank's node
    local_index: int   # this rank's index inside its node
    intra: MPI.Comm    # this rank's node
    inter: MPI.Comm    # the ranks with this local index, one per node, in node order

    @property
    def leaders(self):
        return [members[0] for members in self.nodes]

    def free(self):
        self.intra.Free()
        self.inter.Free()


def _node_colors(comm):
    """(source, this rank's node color) ; color = lowest comm rank of its node."""
    k = settings.get("HPCOLLS_NODE_SIZE")
    size = comm.Get_size()
    if k:
        if size % k:
            raise ValueError(f"hpcolls: HPCOLLS_NODE_SIZE={k} does not divide the communicator size {size}")
        return "HPCOLLS_NODE_SIZE", comm.Get_rank() // k * k
    shared = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        lowest = shared.allreduce(comm.Get_rank(), op=MPI.MIN)
    finally:
        shared.Free()
    return "SHARED", lowest


def node_hierarchy(comm):
    """The NodeHierarchy of `comm` (collective). All ranks must agree on HPCOLLS_NODE_SIZE: a
    disagreement raises ValueError on every rank instead of building mismatched groups."""
    try:
        source, color = _node_colors(comm)
        error = None
    except ValueError as exc:
        source, color, error = None, None, str(exc)
    gathered = comm.allgather((source, color, error))
    errors = sorted({e for _, _, e in gathered if e})
    if errors:
        raise ValueError("; ".join(errors))
    if len({s for s, _, _ in gathered}) != 1:
        raise ValueError("hpcolls: ranks disagree on HPCOLLS_NODE_SIZE")
    colors = [c for _, c, _ in gathered]
    nodes = [[r for r, c in enumerate(colors) if c == lead] for lead in sorted(set(colors))]
    rank = comm.Get_rank()
    node_index = next(i for i, members in enumerate(nodes) if rank in members)
    local_index = nodes[node_index].index(rank)
    intra = comm.Split(node_index, local_index)
    inter = comm.Split(local_index, node_index)
    return NodeHierarchy(source, nodes, node_index, local_index, intra, inter)


def reduce_in_hierarchy_order(per_rank, nodes, op=lambda a, b: a + b):
    """Host reference: reduce `per_rank` (indexed by comm rank) in the fixed hierarchy order."""
    partials = [reduce(op, [per_rank[r] for r in members]) for members in nodes]
    return reduce(op, partials)
