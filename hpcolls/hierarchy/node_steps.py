"""The intra-node steps of the hierarchy: reduce, reduce-scatter, allgather and bcast among the
ranks of one node, and the copies between the node's memory and host arrays.

`NativeNodeSteps` runs them on the native kernels (the node's own NativeComm over CUDA IPC, opened
by hpcolls/peer_group.py on the intra-node communicator), on the call's stream, reducing in local
rank order; `HostNodeSteps` runs the same steps on host memory through bounded MPI messages
(hpcolls/hierarchy/group_exchange.py), reducing in the same order with hpcolls.reduction: the executable
model of the native steps, on which the hierarchy's schemes, their fixed order and their failure
handling are tested on CPUs (tests/mpi/test_hpcolls_hierarchy_path_mpi.py). Both take integer addresses, so
the hierarchical path (hpcolls/hierarchy/path.py) drives either without knowing which.

A step that gives up on a peer raises `Missing` naming it as a rank of the hierarchical
communicator. The native kernels give up on their own (bounded polls); their time-out surfaces at
the next host wait (`to_host`), call, `check()` or `synchronize()`, possibly calls later: the
epoch of the kernel that gave up says which hierarchical call it belonged to.
"""
import bisect
import ctypes

import numpy as np

from .. import dtypes, native_module, reduction
from ..errors import CollectiveTimeout, HpcollsError
from .group_exchange import GroupExchange
from .missing_rank import Missing

_EPOCHS_KEPT = 4096  # calls remembered for mapping a late GPU time-out to its call


class NativeNodeSteps:
    def __init__(self, nc, members, node_index):
        import cupy  # optional dependency: only the GPU's node steps use it (its allocator)
        self.nc, self.members, self.node_index = nc, list(members), node_index
        self.rank, self.size = nc.rank, nc.nranks
        self._native, self._cupy = native_module.load(), cupy
        self._work = None
        self._epochs, self._calls = [], []   # first epoch of each call, and its number
        self.stream = 0

    def begin(self, call, stream, what):
        """Starts call number `call` (`what`) on `stream`; True when the stream is being captured."""
        self.stream = stream
        if len(self._epochs) >= _EPOCHS_KEPT:
            del self._epochs[:_EPOCHS_KEPT // 2], self._calls[:_EPOCHS_KEPT // 2]
        self._epochs.append(self.nc.host_epoch + 1)
        self._calls.append(call)
        return bool(self._native.stream_is_capturing(stream))

    def largest(self, collective):
        """The largest message (bytes; for reduce_scatter and allgather the largest block) the
        native kernels take for `collective`."""
        return {"reduce": self.nc.largest_reduce, "reduce_scatter": self.nc.largest_reduce_scatter,
                "allgather": self.nc.largest_allgather, "bcast": self.nc.largest_bcast}[collective]()

    def reduce(self, src, dst, count, code, op, root):
        self._launch("reduce", self.nc.reduce, src, dst, count, code, op, root, self.stream)

    def reduce_scatter(self, src, dst, counts, code, op):
        self._launch("reduce_scatter", self.nc.reduce_scatter, src, dst, list(counts), code, op, self.stream)

    def allgather(self, src, dst, nbytes, stride):
        self._launch("allgather", self.nc.allgather, src, dst, nbytes, stride, self.stream)

    def bcast(self, buf, nbytes, root):
        self._launch("bcast", self.nc.bcast, buf, nbytes, root, self.stream)

    def to_host(self, host, src):
        """host[:] = the node memory at `src`, once the steps before it on the stream are done."""
        self._native.memcpy(host.ctypes.data, src, host.nbytes, self.stream)
        self.check()

    def from_host(self, dst, host):
        self._native.memcpy(dst, host.ctypes.data, host.nbytes, self.stream)

    def copy_async(self, dst, src, nbytes):
        """nbytes from src to dst (host or node memory) in the stream's order, not waited for."""
        self._native.memcpy_async(dst, src, nbytes, self.stream)

    def work(self, nbytes):
        """Device memory of at least `nbytes`, this object's own (each call is done with it by its
        to_host: nothing on the stream reads it afterwards)."""
        if self._work is None or self._work.mem.size < nbytes:
            self._work = self._cupy.cuda.alloc(max(nbytes, 256))
        return self._work.ptr

    def check(self):
        self._guard(self.nc.check)

    def synchronize(self):
        self._guard(self.nc.synchronize)

    def close(self):
        self.nc.release()

    def _launch(self, name, fn, *args):
        if self._guard(fn, *args) < 0:
            raise HpcollsError(f"hpcolls: internal error: the node's native {name} refused a message the "
                               "hierarchical path sized for it")

    def _guard(self, fn, *args):
        try:
            return fn(*args)
        except CollectiveTimeout:
            raise self._missing() from None

    def _missing(self):
        record = self.nc.error_record
        if record is None:
            return Missing([], f"a kernel of node {self.node_index}")
        i = bisect.bisect_right(self._epochs, record["epoch"]) - 1
        call = self._calls[i] if i >= 0 else None
        return Missing([self.members[record["peer"]]], f"the intra-node {record['collective']} of node "
                       f"{self.node_index} (on the GPU)", call=call)


def _view(address, nbytes, dtype=np.uint8):
    """A numpy array over host memory at `address`."""
    if nbytes == 0:
        return np.empty(0, dtype)
    return np.frombuffer((ctypes.c_char * nbytes).from_address(address), dtype=dtype)


class HostNodeSteps:
    """The node steps on host memory (numpy arrays addressed by integers), bounded like the native
    ones: their model, for tests without a GPU."""

    def __init__(self, intra, members, node_index, failures, timeout_s):
        self.members, self.node_index = list(members), node_index
        self.group = GroupExchange(intra, members, failures, timeout_s, f"inside node {node_index}")
        self.rank, self.size = self.group.rank, self.group.size
        self._work = np.empty(0, np.uint8)

    def begin(self, call, stream, what):
        self.group.call = call
        return False  # host memory: nothing to capture

    def largest(self, collective):
        return 1 << 40

    def reduce(self, src, dst, count, code, op, root):
        mine = self._array(src, count, code).copy()
        gathered = np.empty((self.size, count), mine.dtype) if self.rank == root else None
        self.group.gather(mine, gathered, root)
        if self.rank == root:
            self._array(dst, count, code)[:] = reduction.reduce_in_rank_order(code, op, list(gathered))

    def reduce_scatter(self, src, dst, counts, code, op):
        first = np.concatenate(([0], np.cumsum(counts)))
        blocks = self._array(src, int(first[-1]), code).copy()
        mine = int(counts[self.rank])
        got = np.empty((self.size, mine), blocks.dtype)
        got[self.rank] = blocks[first[self.rank]:first[self.rank + 1]]
        self.group.exchange({q: blocks[first[q]:first[q + 1]] for q in range(self.size) if q != self.rank},
                            {q: got[q] for q in range(self.size) if q != self.rank}, "reduce-scatter")
        self._array(dst, mine, code)[:] = reduction.reduce_in_rank_order(code, op, list(got))

    def allgather(self, src, dst, nbytes, stride):
        if stride != nbytes:
            raise ValueError("hpcolls: the host node steps gather blocks back to back only")
        mine = _view(src, nbytes).copy()
        self.group.allgather(mine, _view(dst, self.size * nbytes).reshape(self.size, nbytes))

    def bcast(self, buf, nbytes, root):
        self.group.bcast(_view(buf, nbytes), root)

    def to_host(self, host, src):
        host.view(np.uint8)[:] = _view(src, host.nbytes)

    def from_host(self, dst, host):
        _view(dst, host.nbytes)[:] = host.view(np.uint8)

    def work(self, nbytes):
        if self._work.nbytes < nbytes:
            self._work = np.empty(nbytes, np.uint8)
        return self._work.ctypes.data

    def check(self):
        pass

    def synchronize(self):
        pass

    def close(self):
        pass

    @staticmethod
    def _array(address, count, code):
        dtype = dtypes.numpy_dtype(code)
        return _view(address, count * dtype.itemsize, dtype)
