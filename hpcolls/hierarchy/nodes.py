"""The node structure of a communicator: which ranks share a node, per-node and across-node groups,
and the fixed order in which a reduction over the hierarchy combines the ranks' contributions.

Nodes come from `comm.Split_type(MPI.COMM_TYPE_SHARED)`, or, with `HPCOLLS_NODE_SIZE=k`, from
the world ranks: world ranks k·i .. k·i+k−1 form emulated node i, so that a sub-communicator's
nodes are the emulated nodes its ranks sit on, as real nodes would be. Nodes are numbered by their
lowest rank in `comm`; inside a node ranks keep their `comm` order (local index). Nodes of unequal
size are allowed here (an MPI job may place different rank counts on its nodes); the inter-node
group of local index i then holds only the nodes that have an i-th rank.

**The fixed reduction order over the hierarchy.** Element by element: first inside each node, left
to right in local-index order (the native kernels' rank order on the node's communicator); then
the node partials, left to right in node order:

    result = (...((P_0 op P_1) op P_2) ... op P_{M-1}),   P_n = (...((x_{n,0} op x_{n,1}) op ...) op x_{n,k-1})

where x_{n,l} is the contribution of local rank l of node n. It is not flat rank order 0..N-1 in
general (even with nodes of consecutive ranks the parenthesization differs), but it is the same on
every rank and in every run, whichever scheme carries the call (hpcolls/hierarchy/path.py):
`reduce_in_hierarchy_order` computes it on the host with the native kernels' operators.
"""
from dataclasses import dataclass

from mpi4py import MPI

from .. import settings
from ..reduction import reduce_in_rank_order


@dataclass
class NodeHierarchy:
    source: str        # "SHARED" or "HPCOLLS_NODE_SIZE=k"
    nodes: list        # per node, the comm ranks on it, ascending
    node_index: int    # this rank's node
    local_index: int   # this rank's index inside its node
    intra: MPI.Comm    # this rank's node
    inter: MPI.Comm    # the ranks with this local index, one per node, in node order

    @property
    def leaders(self):
        return [members[0] for members in self.nodes]

    @property
    def equal_nodes(self):
        """Whether every node holds the same number of ranks."""
        return len({len(members) for members in self.nodes}) == 1

    @property
    def consecutive(self):
        """Whether each node's ranks are consecutive in the communicator, nodes in rank order
        (block placement: node n holds ranks n·k .. n·k+k−1 when the nodes are equal)."""
        flat = [r for members in self.nodes for r in members]
        return flat == list(range(len(flat)))

    def peers_across_nodes(self):
        """The comm ranks of this rank's inter-node group (its local index on every node that has
        one), in node order: rank j of `inter` is entry j."""
        return [members[self.local_index] for members in self.nodes if len(members) > self.local_index]

    def describe(self):
        sizes = sorted({len(m) for m in self.nodes})
        count = f"{len(self.nodes)} node{'s' if len(self.nodes) > 1 else ''}"
        shape = f"{count} x {sizes[0]} rank{'s' if sizes[0] > 1 else ''}" if len(sizes) == 1 else \
            f"{count} of {', '.join(str(len(m)) for m in self.nodes)} ranks"
        return f"{shape} (nodes from {self.source})"

    def free(self):
        self.intra.Free()
        self.inter.Free()


def _node_color(comm, node_size):
    """(source, color): ranks of one node share the color."""
    if node_size:
        return f"HPCOLLS_NODE_SIZE={node_size}", MPI.COMM_WORLD.Get_rank() // node_size
    shared = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        lowest = shared.allreduce(comm.Get_rank(), op=MPI.MIN)
    finally:
        shared.Free()
    return "SHARED", lowest


def emulated_node_count(comm, node_size):
    """How many emulated nodes of `node_size` world ranks `comm`'s ranks sit on: known locally
    (from the groups), no communication."""
    group, world = comm.Get_group(), MPI.COMM_WORLD.Get_group()
    try:
        ranks = group.Translate_ranks(None, world)
    finally:
        group.Free()
        world.Free()
    return len({r // node_size for r in ranks})


def node_hierarchy(comm, node_size=None):
    """The NodeHierarchy of `comm` (collective); `node_size` None reads HPCOLLS_NODE_SIZE. All
    ranks must agree on the node size: a disagreement raises ValueError on every rank instead of
    building mismatched groups."""
    k = settings.get("HPCOLLS_NODE_SIZE") if node_size is None else node_size
    source, color = _node_color(comm, k)
    gathered = comm.allgather((source, color))
    sources = sorted({s for s, _ in gathered})
    if len(sources) != 1:
        raise ValueError(f"hpcolls: ranks disagree on their nodes ({' / '.join(sources)}): set HPCOLLS_NODE_SIZE "
                         "alike on every rank")
    members = {}
    for rank, (_, c) in enumerate(gathered):
        members.setdefault(c, []).append(rank)
    nodes = sorted(members.values(), key=lambda m: m[0])
    rank = comm.Get_rank()
    node_index = next(i for i, m in enumerate(nodes) if rank in m)
    local_index = nodes[node_index].index(rank)
    intra = comm.Split(node_index, local_index)
    inter = comm.Split(local_index, node_index)
    return NodeHierarchy(source, nodes, node_index, local_index, intra, inter)


def reduce_in_hierarchy_order(code, op, per_rank, nodes):
    """Host reference: `per_rank` (indexed by comm rank) reduced in the fixed hierarchy order
    with the native kernels' operators (hpcolls.reduction) for native type `code` and op `op`."""
    partials = [reduce_in_rank_order(code, op, [per_rank[r] for r in members]) for members in nodes]
    return reduce_in_rank_order(code, op, partials)
