"""Whether and how a communicator opens the hierarchical path (hpcolls/hierarchy/path.py): the
node layout of its ranks, what in the settings or the node shape leaves it without one, and the
opening itself, with a NativeComm per node (hpcolls/peer_group.py, as for one node) under the node
steps. Collective: every rank reaches the same verdict.
"""
from .. import log, native_module
from ..peer_group import agreed_reason, open_native, ranks_sharing_gpu
from . import model
from .node_steps import NativeNodeSteps
from .nodes import node_hierarchy
from .path import HierarchicalPath


def node_layout(comm, cfg):
    """The NodeHierarchy of `comm` when it spans several nodes (collective, MPI only), else None."""
    nodes = node_hierarchy(comm, cfg.node_size)
    if len(nodes.nodes) > 1:
        return nodes
    nodes.free()
    return None


def settings_refusal(nodes, cfg):
    """Why the settings or the node shape leave `nodes` without a hierarchical path, or None."""
    if cfg.hierarchy == "off":
        return "HPCOLLS_HIERARCHY=off"
    if not nodes.equal_nodes:
        return "nodes of unequal size (the hierarchical path needs equal nodes)"
    if cfg.ll_mode:
        return f"HPCOLLS_LL_MODE={cfg.ll_mode} (the diagnostic LL variants carry Allreduce only)"
    return None


def scheme_line(nodes, cfg):
    """How the path picks the Allreduce scheme on `nodes` under `cfg` (for `hpcolls info`)."""
    k = len(nodes.nodes[0])
    if cfg.hierarchy != "auto":
        return f"{cfg.hierarchy} (HPCOLLS_HIERARCHY)"
    if k == 1:
        return "leaders (one rank per node)"
    limit = model.leaders_max_bytes(len(nodes.nodes), k)
    return f"leaders up to {limit} B, slices above (the latency model, hpcolls/hierarchy/model.py)"


def open_path(comm, cfg, nodes, device):
    """(HierarchicalPath, why the flat native path is off) for `comm` over `nodes` (the path frees
    them at close), or (None, why neither runs: `nodes` freed); collective, and every rank
    reaches the same verdict."""
    spans = f"ranks span {nodes.describe()}"
    why = settings_refusal(nodes, cfg)
    if why is None:
        try:
            import cupy  # noqa: F401  (its allocator holds the path's device work space)
        except ImportError as exc:
            why = f"cupy is not installed ({exc})"
    why = agreed_reason(comm, why)
    nc = None
    if why is None:
        # The ranks of every node on this GPU: emulated nodes share one, and kernels sized for their
        # own node's share of the SMs alone would take those the other nodes' kernels need.
        sharing = _ranks_on_device(comm, device)
        nc, why = open_native(nodes.intra, cfg, device, ranks_on_device=sharing)
        why = agreed_reason(comm, why and f"node {nodes.node_index}: {why}")
    if why:
        if nc is not None:
            nc.release()
        nodes.free()
        return None, f"{spans} (CUDA IPC reaches one node only); no hierarchical path: {why}"
    path = HierarchicalPath(comm, nodes, NativeNodeSteps(nc, nodes.nodes[nodes.node_index], nodes.node_index), cfg)
    log.info(f"hierarchical path on: {spans}, native inside each node, MPI (staged through host memory) between "
             f"them; Allreduce by {cfg.hierarchy if cfg.hierarchy != 'auto' else 'the latency model'}")
    return path, f"{spans}: small calls take the hierarchical path (native inside each node, MPI between them)"


def _ranks_on_device(comm, device):
    """How many ranks use this rank's GPU: those of `comm`, or more (peer_group.ranks_sharing_gpu);
    collective."""
    try:
        uuid = native_module.load().device_info(device)["uuid"]
    except Exception:  # noqa: BLE001 - no native module or device: open_native says why
        uuid = None
    count = ranks_sharing_gpu(comm, uuid)
    return count if uuid is not None else None
