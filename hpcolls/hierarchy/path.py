"""Small collectives of device buffers on a communicator that spans several nodes (real ones, or
emulated with HPCOLLS_NODE_SIZE): the native kernels inside each node, bounded MPI messages between
the nodes, and a fixed reduction order over the hierarchy (hpcolls/hierarchy/nodes.py), so that every
rank gets the bitwise-same result in every run.

Allreduce, by one of two schemes (hpcolls/hierarchy/model.py picks by size, HPCOLLS_HIERARCHY
can force one):
- leaders: node reduce to local rank 0 -> the leaders exchange their node partials and each
  combines them in node order -> node bcast from local rank 0;
- slices: node reduce-scatter (local rank l gets the node partial of slice l) -> the ranks of local
  index l exchange their slices across the nodes and combine them in node order -> node allgather.
Bcast: the root's local index carries it across the nodes (the root sends to its counterpart on
each node), then a node bcast from that local index. Reduce: a node reduce to the root's local
index on every node, those send their partials to the root, which combines them in node order.
Allgather (nodes of consecutive ranks): node allgather into the node's part of the result, the
node parts exchanged across the nodes by every local index (each rank gets all of them at once).
Reduce_scatter(_block) and larger messages take the flat routes (NCCL where every rank has its own
GPU, else MPI): hpcolls/routes/native.py asks `takes` and calls `make` as part of its one decision.

Between the nodes the step is MPI on host memory: the node's partial is copied from the GPU into
pinned memory, exchanged with point-to-point messages polled against HPCOLLS_TIMEOUT
(hpcolls/hierarchy/group_exchange.py), combined on the host with the native kernels' own operators
(hpcolls/reduction.py) in node order, and copied back. For the small messages this path carries a
device combine after a CUDA-aware MPI or NCCL exchange would save the two copies but add a kernel
and a synchronization; the host combine keeps the result equal to the host reference by
construction. On a stream being captured into a CUDA graph, the copies become the graph's memcpy
nodes and the host step a host node that every replay runs (hpcolls/hierarchy/host_steps.py).

A rank that skips a call or dies: every bounded wait ends (the native kernels' own deadline,
the polled MPI messages'), and the ranks that gave up find the missing rank by following each
other's notices (hpcolls/hierarchy/missing_rank.py); each raises CollectiveTimeout naming it, and the
communicator is broken (later calls raise CommunicatorBroken).

`HierarchicalPath` knows only integer addresses and node steps: `NativeNodeSteps` (the GPU) or
`HostNodeSteps` (host memory, the CPU tests'), hpcolls/hierarchy/node_steps.py. Whether and how
a communicator opens the path: hpcolls/hierarchy/opening.py.
"""
import atexit
import contextlib
import weakref

import numpy as np

from .. import dtypes
from ..errors import CollectiveTimeout, CommunicatorBroken, HpcollsError
from ..reduction import reduce_in_rank_order
from ..staging import StagingPool
from . import model
from .group_exchange import GroupExchange
from .host_steps import CapturedHostSteps, EagerHostSteps
from .missing_rank import FailureChannel, Missing
from .node_steps import HostNodeSteps
from .nodes import node_hierarchy

_NAMES_KEPT = 4096
CARRIED = ("allreduce", "bcast", "reduce", "allgather")  # the collectives it carries, as routes/collectives.py names them
_open_paths = weakref.WeakSet()


class HierarchicalPath:
    """The hierarchical collectives of one communicator (`comm`, an mpi4py communicator) whose
    ranks sit on the nodes of `nodes` (a NodeHierarchy of equal nodes), run by `node` (node steps)."""

    def __init__(self, comm, nodes, node, cfg, failures=None):
        self.h, self.node = nodes, node
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.failures = failures or FailureChannel(comm)
        self.timeout_s = cfg.timeout_s
        self.scheme = cfg.hierarchy
        self.inter = GroupExchange(nodes.inter, nodes.peers_across_nodes(), self.failures, cfg.timeout_s,
                                   f"between the nodes (local index {nodes.local_index})")
        self.staging = StagingPool(cfg.staging)
        self._spans = f"ranks span {nodes.describe()}"  # for every call's route note: made once
        self.captured = CapturedHostSteps(node, self.staging, self.inter)
        self.calls = 0
        self.broken = None
        self._names = {}
        _open_paths.add(self)

    @classmethod
    def on_host(cls, comm, cfg):
        """The path over `comm` with its node steps on host memory (HostNodeSteps: the model the
        CPU tests run); collective."""
        nodes = node_hierarchy(comm, cfg.node_size)
        failures = FailureChannel(comm)
        steps = HostNodeSteps(nodes.intra, nodes.nodes[nodes.node_index], nodes.node_index, failures, cfg.timeout_s)
        return cls(comm, nodes, steps, cfg, failures)

    @property
    def nnodes(self):
        return len(self.h.nodes)

    @property
    def node_size(self):
        return len(self.h.nodes[0])

    # -- what it takes: the same answer on every rank (sizes, types and roots agree) --------------
    def allreduce_scheme(self, count, code):
        """'leaders' or 'slices' for an Allreduce of `count` elements of native type `code`, or None
        when the node steps cannot carry it (the caller takes the flat routes)."""
        k, nbytes = self.node_size, count * dtypes.ITEMSIZE[code]
        scheme = self.scheme if self.scheme in ("leaders", "slices") else \
            model.choose(nbytes, count, self.nnodes, k)
        if scheme == "slices" and count % k:
            scheme = "leaders"  # the native allgather needs equal slices
        if scheme == "leaders":
            fits = nbytes <= min(self.node.largest("reduce"), self.node.largest("bcast"))
        else:
            fits = nbytes // k <= min(self.node.largest("reduce_scatter"), self.node.largest("allgather"))
        return scheme if fits else None

    # -- as the native route asks: a DeviceCall of a collective (hpcolls/routes/collectives.py) -------
    def takes(self, collective, call):
        """(True, how) where this path makes `call`, a DeviceCall of `collective`, else (False, why
        not); the same answer on every rank (it reads only what every rank passes alike)."""
        spans = self._spans
        if collective.native not in CARRIED:
            return False, f"{spans}: the hierarchical path carries Allreduce, Bcast, Reduce and Allgather only"
        if collective.native == "allreduce":
            scheme = self.allreduce_scheme(call.count, call.code)
            if scheme is None:
                return False, f"{spans}: more than the node kernels take in either scheme of the hierarchical path"
            if self.scheme == scheme:
                by = f"HPCOLLS_HIERARCHY={scheme}"
            elif self.scheme == "auto":
                by = "the latency model, hpcolls/hierarchy/model.py"
            else:
                by = f"HPCOLLS_HIERARCHY={self.scheme}, but {call.count} elements are not {self.node_size} equal slices"
            return True, f"{scheme} ({by}); {spans}"
        if collective.native == "allgather" and not self.h.consecutive:
            return False, f"{spans}, not of consecutive ranks: the hierarchical Allgather needs each node's blocks together"
        largest = self.node.largest(collective.native)
        if call.nbytes > largest:
            return False, f"{spans}: more than the node kernels take in one call ({largest} B)"
        return True, spans

    def make(self, collective, call, stream):
        """Makes `call` (a DeviceCall of `collective` that `takes` accepted) on `stream`."""
        steps = {"allreduce": lambda: self.allreduce(call.send, call.recv, call.count, call.code, call.op, stream),
                 "bcast": lambda: self.bcast(call.recv, call.nbytes, call.root, stream),
                 "reduce": lambda: self.reduce(call.send, call.recv, call.count, call.code, call.op, call.root, stream),
                 "allgather": lambda: self.allgather(call.send, call.recv, call.nbytes, stream)}
        if not steps[collective.native]():
            raise HpcollsError(f"hpcolls: internal error: the hierarchical path refused a {collective.method} of "
                               f"{call.nbytes} B that it said it takes")

    # -- the collectives on integer addresses: True when taken (done, or enqueued on the stream) ---
    def allreduce(self, src, dst, count, code, op, stream):
        """dst = src reduced over every rank in the hierarchy's order (src == dst: in place)."""
        if count == 0:
            return True
        scheme = self.allreduce_scheme(count, code)
        if scheme is None:
            return False
        body = self._leaders if scheme == "leaders" else self._slices
        self._run(f"Allreduce ({scheme})", stream, lambda hs: body(hs, src, dst, count, code, op))
        return True

    def bcast(self, buf, nbytes, root, stream):
        if nbytes > self.node.largest("bcast"):
            return False
        if nbytes:
            self._run("Bcast", stream, lambda hs: self._bcast(hs, buf, nbytes, *self._where(root)))
        return True

    def reduce(self, src, dst, count, code, op, root, stream):
        """dst at `root` = src reduced in the hierarchy's order; dst elsewhere is not touched."""
        if count * dtypes.ITEMSIZE[code] > self.node.largest("reduce"):
            return False
        if count:
            self._run("Reduce", stream, lambda hs: self._reduce(hs, src, dst, count, code, op, root))
        return True

    def allgather(self, src, dst, nbytes, stream):
        """Rank r's `nbytes` (at src; None: already at dst + r * nbytes) land at dst + r * nbytes."""
        if not self.h.consecutive or nbytes > self.node.largest("allgather"):
            return False
        if nbytes:
            self._run("Allgather", stream, lambda hs: self._allgather(hs, src, dst, nbytes))
        return True

    # -- the schemes -------------------------------------------------------------------------------
    def _leaders(self, hs, src, dst, count, code, op):
        node = self.node
        node.reduce(src, dst, count, code, op, 0)
        if node.rank == 0:
            self._across_nodes(hs, dst, dst, count, code, op)
        node.bcast(dst, count * dtypes.ITEMSIZE[code], 0)

    def _slices(self, hs, src, dst, count, code, op):
        node, itemsize = self.node, dtypes.ITEMSIZE[code]
        k, slice_count = node.size, count // node.size
        mine = dst + node.rank * slice_count * itemsize
        work = hs.work(slice_count * itemsize)
        node.reduce_scatter(src, work, [slice_count] * k, code, op)
        self._across_nodes(hs, work, mine, slice_count, code, op)
        node.allgather(mine, dst, slice_count * itemsize, slice_count * itemsize)

    def _across_nodes(self, hs, partial, dst, count, code, op):
        """dst = this node's partial (`count` elements at `partial`, node memory) combined with the
        other nodes', in node order, through host memory."""
        part = hs.buffer(count, code)

        def combine():
            gathered = np.empty((self.nnodes, count), part.dtype)
            hs.inter.allgather(part, gathered)
            part[:] = reduce_in_rank_order(code, op, list(gathered))
        hs.run([(part, partial)], combine, [(dst, part)])

    def _bcast(self, hs, buf, nbytes, root_node, root_local):
        node = self.node
        if node.rank == root_local:
            host = hs.buffer(nbytes, dtypes.U8)
            here = self.h.node_index == root_node
            hs.run([(host, buf)] if here else [], lambda: hs.inter.bcast(host, root_node),
                   [] if here else [(buf, host)])
        node.bcast(buf, nbytes, root_local)

    def _reduce(self, hs, src, dst, count, code, op, root):
        node = self.node
        root_node, root_local = self._where(root)
        if node.rank != root_local:
            node.reduce(src, src, count, code, op, root_local)  # the receive buffer is the root's only
            return
        target = dst if self.rank == root else hs.work(count * dtypes.ITEMSIZE[code])
        node.reduce(src, target, count, code, op, root_local)
        part = hs.buffer(count, code)
        if self.rank != root:
            hs.run([(part, target)], lambda: hs.inter.gather(part, None, root_node), [])
            return

        def combine():
            gathered = np.empty((self.nnodes, count), part.dtype)
            hs.inter.gather(part, gathered, root_node)
            part[:] = reduce_in_rank_order(code, op, list(gathered))
        hs.run([(part, target)], combine, [(dst, part)])

    def _allgather(self, hs, src, dst, nbytes):
        node = self.node
        region = dst + self.h.nodes[self.h.node_index][0] * nbytes
        node.allgather(dst + self.rank * nbytes if src is None else src, region, nbytes, nbytes)
        part = hs.buffer(node.size * nbytes, dtypes.U8)
        gathered = hs.buffer(self.nnodes * node.size * nbytes, dtypes.U8).reshape(self.nnodes, -1)
        hs.run([(part, region)], lambda: hs.inter.allgather(part, gathered), [(dst, gathered.reshape(-1))])

    # -- the call, its failure, its memory -----------------------------------------------------------
    def _where(self, rank):
        """(node index, local index) of a rank of the communicator."""
        return next((n, members.index(rank)) for n, members in enumerate(self.h.nodes) if rank in members)

    def _run(self, name, stream, body):
        """Makes body(host steps) as call `self.calls + 1`, now or, on a capturing stream, into the
        graph (hpcolls/hierarchy/host_steps.py); a refused capture raises before anything is enqueued."""
        if self.broken:
            raise CommunicatorBroken(f"hpcolls: communicator is broken ({self.broken}); create a new one")
        try:
            self._raise_replay_failure()
        except Missing as missing:
            self._fail(missing)
        capturing = self.node.begin(self.calls + 1, stream, name)
        hs = self.captured.begin(stream) if capturing else EagerHostSteps(self.node, self.staging, self.inter)
        self.calls += 1
        self.inter.call = self.calls
        self._names[self.calls] = name
        if len(self._names) > _NAMES_KEPT:
            self._names.pop(next(iter(self._names)))
        try:
            body(hs)
        except Missing as missing:
            self._fail(missing)
        finally:
            hs.close()

    def _raise_replay_failure(self):
        """Raises what the host step of a replayed graph met since the last call: `Missing` (the
        caller turns it into CollectiveTimeout) or HpcollsError."""
        failure = self.captured.failure()
        if failure is None:
            return
        if isinstance(failure, Missing):
            raise failure
        raise HpcollsError(f"hpcolls: the step between the nodes of a replayed hierarchical call failed: "
                           f"{failure!r}") from failure

    def _fail(self, seen):
        """Finds the missing rank with the other ranks (hpcolls/hierarchy/missing_rank.py), breaks the
        communicator and raises CollectiveTimeout saying who and how it is known."""
        call = seen.call if seen.call is not None else self.calls
        suspects = seen.suspects
        earlier = self.failures.failed(call)
        if earlier is not None and earlier.call < call:  # it began in a call this rank had finished
            call, suspects = earlier.call, ()
        missing, followed, named_me = self.failures.resolve(call, suspects, seen.step, self.timeout_s)
        name = self._names.get(call, "collective")
        if missing:
            who = f"{_ranks(missing)} {'is' if len(missing) == 1 else 'are'} missing"
        elif named_me:
            who = f"this rank ({self.rank}) is the one missing ({_ranks(named_me)} waited for it)"
        else:
            who = "the missing rank could not be told apart"
        chain = "".join(f"; {_ranks([n.observer])} waited for {_ranks(n.suspects)} in {n.step}"
                        for n in followed if n.suspects)
        how = "stopped waiting, told by another rank," if seen.early else f"gave up after {self.timeout_s:g} s waiting"
        mine = f"this rank ({self.rank}) {how} for {_ranks(seen.suspects)} in {seen.step}" if suspects else \
            f"this rank ({self.rank}) had done its part of that call and learnt of the failure from the others"
        why = (f"hierarchical {name}, call {call} on this communicator: {who}{chain}; {mine}: a rank skipped or "
               "reordered a collective, or died")
        self.broken = why
        raise CollectiveTimeout(f"hpcolls: {why}; the communicator is now broken (HPCOLLS_TIMEOUT sets the limit)")

    def synchronize(self):
        """Waits for this rank's last node step; raises CollectiveTimeout (once) if one gave up, or
        if another rank reported a call that failed (this rank may have done its part of it)."""
        self._checked(self.node.synchronize)

    def check(self):
        """As synchronize(), without waiting for the GPU."""
        self._checked(self.node.check)

    def _checked(self, wait):
        if self.broken:
            return
        try:
            wait()
            self._raise_replay_failure()
            reported = self.failures.failed(self.calls)
            if reported is not None:
                raise Missing((), "", call=reported.call, early=True)
        except Missing as missing:
            self._fail(missing)

    def close(self):
        """Collective over the communicator's ranks: no peer may still be storing into this node's
        scratch when it is released."""
        with contextlib.suppress(Missing):
            self.node.synchronize()
        self.h.intra.Barrier()
        self.release()
        self.h.free()
        self.failures.free()

    def release(self):
        """Local: the node steps' device resources."""
        if self.node is not None:
            self.captured.release()
            self.node.close()
            self.node = None
        _open_paths.discard(self)


def _ranks(ranks):
    ranks = list(ranks)
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {', '.join(map(str, ranks))}"


@atexit.register
def _release_all():
    # Local clean-up only: at exit other ranks may be gone, so nothing collective here.
    for path in list(_open_paths):
        path.release()
