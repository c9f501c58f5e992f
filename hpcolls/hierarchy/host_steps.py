"""The host part of one hierarchical call (hpcolls/hierarchy/path.py): node memory copied
into host buffers, a step on the host (the exchange between the nodes and its combine), results
copied back; made now, or enqueued on the stream when the stream is being captured.

`EagerHostSteps` makes each step as the call is made: the copy to the host waits for the node
steps before it on the stream, the host step runs on the calling thread, and its failure
(`Missing`) reaches the caller at once. Its host buffers are the staging pool's, given back when
the call ends.

`CapturedHostSteps` turns the same steps into graph nodes: the copies become memcpy nodes and the
host step a host node (hpcolls._native.launch_host_call) that runs on CUDA's host-function thread
at every replay. So its host buffers (pinned: a graph copies only those) and the host step itself
belong to the graph for its life: they are kept until the communicator closes, which no graph
holding them may outlive. The host step exchanges on its own MPI tag with failure notices off
(GroupExchange.detached), so a replay's messages never meet those of the calling thread's calls;
that needs MPI_THREAD_MULTIPLE. A replay's host step cannot raise into the caller: what it hits is
kept and raised by the communicator's next call, check() or synchronize().
"""
import threading

from mpi4py import MPI

from .. import dtypes, native_module
from ..errors import GraphCaptureError

_FIRST_TAG, _TAGS = 1000, 30000  # the captured calls' MPI tags, below every MPI's MPI_TAG_UB (>= 32767)


class EagerHostSteps:
    def __init__(self, node, staging, inter):
        self.node, self.staging, self.inter = node, staging, inter
        self._blocks = []

    def buffer(self, count, code):
        """A host array of `count` elements of native type `code`, for this call."""
        host, block = self.staging.take(count * dtypes.ITEMSIZE[code], dtypes.numpy_dtype(code))
        self._blocks.append(block)
        return host

    def work(self, nbytes):
        """Node memory of at least `nbytes` for this call (the node steps' own, reused by each call)."""
        return self.node.work(nbytes)

    def run(self, uploads, step, downloads):
        """For each (host, src) of `uploads` host[:] = node memory at src; then step(); then for
        each (dst, host) of `downloads` node memory at dst = host."""
        for host, src in uploads:
            self.node.to_host(host, src)
        step()
        for dst, host in downloads:
            self.node.from_host(dst, host)

    def close(self):
        for block in self._blocks:
            self.staging.give_back(block)
        self._blocks = []


class CapturedHostSteps:
    """The host steps of calls captured on this communicator, and what their graphs hold."""

    def __init__(self, node, staging, inter):
        self.node, self.staging, self._inter = node, staging, inter
        self.inter = None  # the exchange of the call being captured
        self._blocks, self._device, self._host_calls, self._failures = [], [], [], []
        self._lock = threading.Lock()
        self._captured = 0
        self.stream = 0

    @staticmethod
    def refusal(staging):
        """Why a call cannot be captured here, or None."""
        if MPI.Query_thread() < MPI.THREAD_MULTIPLE:
            return ("MPI was initialized below MPI_THREAD_MULTIPLE, and a replayed graph's step between the "
                    "nodes calls MPI from CUDA's host-function thread")
        if staging.kind != "pinned":
            return "its host buffers must be page-locked (HPCOLLS_STAGING=pinned, and cupy installed)"
        return None

    def begin(self, stream):
        """Starts capturing one call on `stream`: the returned object's buffer/run/close serve it."""
        why = self.refusal(self.staging)
        if why:
            raise GraphCaptureError(f"hpcolls: this call's stream is being captured into a CUDA graph, but a "
                                    f"hierarchical call cannot be captured: {why}; make it outside the capture")
        self.stream = stream
        self.inter = self._inter.detached(_FIRST_TAG + self._captured % _TAGS)
        self._captured += 1
        return self

    def buffer(self, count, code):
        host, block = self.staging.take(count * dtypes.ITEMSIZE[code], dtypes.numpy_dtype(code))
        self._blocks.append(block)  # the graph's for its life
        return host

    def work(self, nbytes):
        """Node memory of its own for this call: the graph uses it at every replay, beside the eager
        calls that reuse the node steps' work memory."""
        import cupy  # optional dependency: only a captured call on the GPU gets here
        memory = cupy.cuda.alloc(max(nbytes, 256))
        self._device.append(memory)
        return memory.ptr

    def run(self, uploads, step, downloads):
        for host, src in uploads:
            self.node.copy_async(host.ctypes.data, src, host.nbytes)
        self._host_calls.append(native_module.load().launch_host_call(self.stream, self._kept(step)))
        for dst, host in downloads:
            self.node.copy_async(dst, host.ctypes.data, host.nbytes)

    def close(self):
        pass  # the buffers stay with the graph

    def _kept(self, step):
        def host_node():
            try:
                step()
            except BaseException as exc:  # noqa: BLE001 - nothing above a host node can catch it
                with self._lock:
                    self._failures.append(exc)
        return host_node

    def failure(self):
        """The first failure a replayed host step met since the last call (taken), or None:
        a `Missing`, or another exception to re-raise."""
        with self._lock:
            first = self._failures[0] if self._failures else None
            self._failures = []
        return first

    def release(self):
        """Drops every captured call's host step and buffers: no graph holding them may run again."""
        for handle in self._host_calls:
            native_module.load().release_host_call(handle)
        self._host_calls = []
        for block in self._blocks:
            self.staging.give_back(block)
        self._blocks, self._device = [], []

