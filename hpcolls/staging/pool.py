"""Host memory that device buffers are staged through for an MPI that is not CUDA-aware.

Each communicator keeps its page-locked (pinned) blocks and reuses them: a copy between device
memory and pinned memory runs at the bus' speed without the driver's own bounce through a
pinned buffer, and no allocation is made per call. Blocks come in powers of two, so a few sizes
serve every message; one is taken per buffer of a call, and given back when the call (or its
request) completes. HPCOLLS_STAGING=pageable takes fresh numpy memory per call instead (the
comparison `python -m hpcolls.tools.staging_bench` makes); so does a process without cupy, whose
pinned allocator this uses.
"""
import numpy as np

from .. import log

_SMALLEST = 256


def _pinned_allocator():
    try:
        import cupy
    except ImportError:
        return None
    return cupy.cuda.alloc_pinned_memory


class StagingPool:
    def __init__(self, kind):
        self._alloc = _pinned_allocator() if kind == "pinned" else None
        if kind == "pinned" and self._alloc is None:
            log.info_once(("staging", "pageable"), "staging through pageable host memory: cupy, whose pinned "
                          "allocator hpcolls uses, is not installed")
        self.kind = "pinned" if self._alloc is not None else "pageable"
        self._free = {}  # block size -> [uint8 arrays over pinned memory]

    def take(self, nbytes, dtype):
        """(host array of `dtype` and `nbytes` bytes, the block of memory under it: give_back it
        once the array is no longer used; it keeps that memory alive till then)."""
        if self._alloc is None:
            block = np.empty(nbytes, np.uint8)
            return block.view(dtype), block
        size = max(_SMALLEST, 1 << max(nbytes - 1, 0).bit_length())
        free = self._free.get(size)
        block = free.pop() if free else np.frombuffer(self._alloc(size), np.uint8, size)
        return block[:nbytes].view(dtype), block

    def give_back(self, block):
        if self._alloc is not None:
            self._free.setdefault(block.size, []).append(block)
