"""Allreduce of device buffers on the native barrier-free kernels, and where their limits send
it: NCCL (routes/nccl.py) past the native limit where every rank has its own GPU, the native
kernels in pieces elsewhere, MPI where the native path is off.

`NativeAllreduce` is the part of hpcolls.Communicator that holds this route's state (scratch,
peer mappings, the NCCL communicator) and makes the choice; `carries` is the one question of
what the kernels take, answered from the types and ops the native layer lists (hpcolls.dtypes
mirrors native/include/hpcolls/types.h), so that types the kernels gain switch over by
themselves.
"""
import types

from mpi4py import MPI

from .. import dtypes, hierarchy, log
from ..capture import refuse_capture
from ..errors import HpcollsError, InvalidBufferError
from ..peer_group import open_native
from . import hierarchical

try:
    import cupy as _cupy
    _CUPY_NDARRAY = _cupy.ndarray
except ImportError:
    _CUPY_NDARRAY = None


def carries(code, opc):
    """Whether the native kernels (and the NCCL and rank-order host routes behind them) take an
    Allreduce of native type `code` with native op `opc` (either None: one they do not have):
    dtypes.OPS_OF, the native layer's own table."""
    return code is not None and opc is not None and opc in dtypes.OPS_OF[code]


class NativeAllreduce:
    """Mixed into hpcolls.Communicator: its native path, opened on the first device Allreduce."""

    def _init_native(self):
        self._native = None
        self._native_off = None      # reason the native path is off, once decided
        self._device = None
        self._nccl = None
        self._hier = None            # routes/hierarchical.py's path, where the ranks span nodes
        self._layout = None          # the NodeHierarchy when they do, False when not; None: not asked yet

    def _allreduce_device(self, send, recv, op, opc, stream, through_mpi):
        """send None: in place. `through_mpi()` makes the call through the MPI routes."""
        self._open_for(recv.device, stream)
        algo = self._cfg.algo
        if self._hier is not None and algo in ("auto", "oneshot", "twoshot") and self._hier.allreduce(
                recv.ptr if send is None else send.ptr, recv.ptr, recv.count, recv.code, opc, stream):
            return None
        if self._native is not None and algo in ("auto", "oneshot", "twoshot"):
            used = self._native.allreduce(recv.ptr if send is None else send.ptr, recv.ptr, recv.count,
                                          recv.code, opc, stream)
            if used >= 0:
                if log.level >= 2:
                    kernel = self._native.kernel(recv.nbytes)
                    log.info_once(("allreduce", kernel, recv.nbytes.bit_length()),
                                  f"allreduce {recv.nbytes} B {dtypes.NAMES[recv.code]}: {kernel} (native)")
                return None
        route, why = self._route_past_native(recv.code, opc, stream)
        if route == "nccl":
            log.info_once(("nccl", recv.nbytes.bit_length()), f"allreduce {recv.nbytes} B: NCCL")
            self._nccl.allreduce(send, recv, opc, stream)
        elif route == "pieces":
            piece = self._native.largest_message()
            log.info_once(("pieces", recv.nbytes.bit_length()),
                          f"allreduce {recv.nbytes} B: native, in pieces of {piece} B ({why})")
            self._allreduce_in_pieces(send, recv, opc, piece, stream)
        else:
            log.info_once(("mpi", recv.nbytes.bit_length()), f"allreduce {recv.nbytes} B: MPI ({why})")
            through_mpi()
        return None

    def _route_past_native(self, code, opc, stream):
        """(route, why) for an Allreduce of `code` and op code `opc` that the native path does not
        take whole: "nccl" (HPCOLLS_ALGO auto or nccl, where NCCL runs and has the type and op; set
        up here on first use), else "pieces" (the native kernels in pieces: microseconds per MiB
        where MPI, staged through host memory, takes milliseconds; docs/PERFORMANCE.md), else
        "mpi"; `why` says why not the ones before."""
        algo = self._cfg.algo
        why = f"HPCOLLS_ALGO={algo}"
        if opc is None:
            return "mpi", f"{why}; an op the native kernels and NCCL do not carry"
        if algo in ("auto", "nccl"):
            nccl = self._nccl_path(stream)
            if nccl.supports(code, opc):
                return "nccl", ""
            why = f"NCCL: {nccl.reason or f'no {dtypes.NAMES[code]} {dtypes.OP_NAMES[opc]}'}"
        if self._native is None:
            return "mpi", f"{why}; native path: {self._native_off}"
        if self._native.largest_message() < dtypes.ITEMSIZE[code]:
            return "mpi", f"{why}; the native path takes no message of one element"
        return "pieces", f"larger than the native limit; {why}"

    def _allreduce_in_pieces(self, send, recv, opc, piece, stream):
        """The Allreduce as native calls of `piece` bytes each (the last one shorter), in order on
        the stream. The op is elementwise, so the pieces together are the call, and every element
        is still reduced in rank order: bitwise equal on every rank, and capturable in a CUDA
        graph like any native call. A piece is whole 16-byte chunks, so each keeps the buffers'
        alignment and holds whole elements."""
        itemsize = dtypes.ITEMSIZE[recv.code]
        per_piece = piece // itemsize
        src = recv.ptr if send is None else send.ptr
        for first in range(0, recv.count, per_piece):
            offset = first * itemsize
            count = min(per_piece, recv.count - first)
            if self._native.allreduce(src + offset, recv.ptr + offset, count, recv.code, opc, stream) < 0:
                raise HpcollsError(f"hpcolls: internal error: the native path refused a piece of {count * itemsize} B "
                                   f"(largest message it takes: {piece} B)")

    def _open_for(self, device, stream):
        """Opens the device paths on the communicator's first device call (collective), then checks
        that later calls use the same GPU."""
        if self._device is None:
            refuse_capture(
                stream, "a communicator's first collective on device buffers (it sets up peer memory: "
                "collective, with device synchronization)", "make one such call with it before capturing",
                comm=self.mpi)
            self._open(device)
        elif device != self._device:
            raise InvalidBufferError(f"hpcolls: buffer is on GPU {device}, this communicator on GPU {self._device}")

    def _node_layout(self):
        """The NodeHierarchy when the ranks span several nodes (real, or emulated with
        HPCOLLS_NODE_SIZE), else None; collective the first time (MPI only, no CUDA call)."""
        if self._layout is None:
            self._layout = hierarchical.node_layout(self.mpi, self._cfg) or False
        return self._layout or None

    def _hierarchical_path(self, device, stream):
        """The hierarchical path for a device-buffer Bcast, Reduce or Allgather, or None. It opens
        with the device paths on the first device Allreduce, and on these calls only where the
        nodes are emulated (HPCOLLS_NODE_SIZE: known without communication): asking MPI for the
        nodes is collective, and these methods may take device buffers on some ranks and host
        buffers on others, which would leave the ranks in different calls."""
        if self._cfg.algo in ("nccl", "mpi"):
            return None
        if self._device is None:
            k = self._cfg.node_size
            if not k or hierarchy.emulated_node_count(self.mpi, k) < 2:
                return None
            self._open_for(device, stream)
        return self._hier

    def _open(self, device):
        self._device = device
        if self._cfg.algo in ("nccl", "mpi"):
            self._native_off = f"HPCOLLS_ALGO={self._cfg.algo}"
        else:
            try:
                nodes = self._node_layout()
                if nodes is None:
                    self._native, self._native_off = open_native(self.mpi, self._cfg, device)
                else:  # never CUDA IPC between nodes, emulated ones included
                    self._hier, self._native_off = hierarchical.open_path(self.mpi, self._cfg, nodes, device)
            except Exception:
                self._device = None  # not opened: the next call tries again (and says why again)
                raise
        # The fast path skips validation and the once-per-decision INFO log, so it stays off
        # when either is asked for, and for algos that never use the native kernels.
        if self._native is not None and not self._cfg.validate and log.level < 2:
            self._install_fast()
        if self._native_off:
            log.info(f"native path off: {self._native_off}")

    def _install_fast(self, full=None):
        """Shadows the Allreduce method with native code for its common call (fast_allreduce.cpp:
        the host time of a call is a budget: docs/ARCHITECTURE.md, "Targets and floors"); that
        code hands every other call to `full`, by default the method. Needs cupy's plain
        `_c_contiguous` attribute (cupy 13, 14)."""
        if _CUPY_NDARRAY is None or not hasattr(_CUPY_NDARRAY, "_c_contiguous"):
            return
        from .._native import make_fast_allreduce
        if full is None:
            full = types.MethodType(type(self).Allreduce, self)
        self.Allreduce = make_fast_allreduce(
            self._native, full, _CUPY_NDARRAY, MPI.IN_PLACE,
            dtypes.mpi_ops_by_code(), dtypes.numpy_code_pairs(), self._device)

    def _release_native(self):
        """Frees the native communicator, and the native Allreduce entry that launches on it."""
        self._native.release()
        self._native = None
        self.__dict__.pop("Allreduce", None)

    def _nccl_path(self, stream):
        if self._nccl is None:
            refuse_capture(
                stream, "a communicator's first message too large for the native path sets up its NCCL path "
                "(collective, with NCCL's own device set-up), which", "make one such call before capturing",
                comm=self.mpi)
            from .._native import device_info
            from .nccl import NcclPath
            self._nccl = NcclPath(self.mpi, device_info(self._device)["uuid"])
        return self._nccl

    def close(self):
        """Releases scratch, peer mappings and NCCL (collective; the MPI communicator stays)."""
        if self._native is not None:
            self._native.synchronize()
            MPI.Comm.Barrier(self)  # no peer may still be storing into our scratch
            self._release_native()
        if self._nccl is not None:
            self._nccl.destroy()
            self._nccl = None
        if self._hier is not None:
            self._hier.close()  # frees the node groups too
            self._hier = None
        elif self._layout:
            self._layout.free()
        self._layout = False
        self._native_off = "communicator closed"

    def synchronize(self):
        """Waits for this communicator's last stream and raises if a collective timed out."""
        if self._native is not None:
            self._native.synchronize()
        if self._hier is not None:
            self._hier.synchronize()

    def check(self):
        """Raises CollectiveTimeout if an earlier collective timed out (no device wait)."""
        if self._native is not None:
            self._native.check()
        if self._hier is not None:
            self._hier.check()

    @property
    def native_path(self):
        """'on', or why the native path is off (None before the first device-buffer call)."""
        return "on" if self._native is not None else self._native_off

    def native_comm(self, device):
        """The hpcolls._native.NativeComm carrying this communicator's device-buffer AllReduces
        on GPU ``device`` (collective the first time: it opens the native path), or None when
        that path is off (``native_path`` says why). For native code that issues its own
        AllReduces, such as the solver's tridiagonalization loop."""
        if self._device is None:
            self._open(device)
        elif device != self._device:
            raise InvalidBufferError(f"hpcolls: GPU {device} requested, this communicator is on GPU {self._device}")
        return self._native if self._cfg.algo in ("auto", "oneshot", "twoshot") else None
