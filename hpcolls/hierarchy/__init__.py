"""The hierarchy: a communicator whose ranks span several nodes (real ones, or emulated with
HPCOLLS_NODE_SIZE) runs its small collectives on device buffers native inside each node and as
bounded MPI messages between the nodes, in a fixed order, so results are bitwise identical on
every rank and in every run. The native route (hpcolls/routes/native.py) hands it the calls.

- nodes.py: which ranks share a node, the node and across-node groups, the fixed reduction order;
- model.py: which Allreduce scheme (leaders or slices) carries a message: the latency model;
- path.py: HierarchicalPath, the collectives over the hierarchy, their failures, their graphs;
- opening.py: whether and how a communicator opens the path;
- node_steps.py: the steps inside a node (the native kernels, or their host model for CPU tests);
- host_steps.py: the step between the nodes, made now or captured into a CUDA graph;
- group_exchange.py: the bounded point-to-point exchanges between the nodes;
- missing_rank.py: how every rank learns which rank is missing from a call.
"""
from .nodes import NodeHierarchy, node_hierarchy, reduce_in_hierarchy_order
from .opening import node_layout, open_path, scheme_line, settings_refusal
from .path import CARRIED, HierarchicalPath

__all__ = ["NodeHierarchy", "node_hierarchy", "reduce_in_hierarchy_order", "node_layout", "open_path",
           "scheme_line", "settings_refusal", "CARRIED", "HierarchicalPath"]
