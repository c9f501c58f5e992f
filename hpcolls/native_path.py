"""The part of hpcolls.Communicator that holds its native path: scratch and peer mappings (the
hpcolls._native.NativeComm), the NCCL communicator behind it, and the native entries installed
on the instance; where the ranks span several nodes (real, or emulated with HPCOLLS_NODE_SIZE),
the hierarchical path (hpcolls/hierarchy/) in place of the flat native one, which is then
never opened (CUDA IPC reaches one node only) and so installs no native entries. Opened
collectively by the first collective on device buffers the native route carries
(hpcolls/routes/native.py decides where each call goes; this holds what it needs).
"""
import types

from mpi4py import MPI

from . import dtypes, log, native_module
from .capture import refuse_capture
from .errors import InvalidBufferError
from .peer_group import open_native
from .hierarchy import node_layout, open_path

try:
    import cupy as _cupy
    _CUPY_NDARRAY = _cupy.ndarray
except ImportError:
    _CUPY_NDARRAY = None


class NativePath:
    """Mixed into hpcolls.Communicator: its native path, opened on the first device collective."""

    def _init_native(self):
        self._native = None
        self._native_off = None      # reason the native path is off, once decided
        self._device = None
        self._nccl = None
        self._hier = None            # the hierarchical path (hpcolls/hierarchy/), where the ranks span nodes

    def _use_device(self, device, stream):
        """Opens the native path on GPU `device` at the first device-buffer call (collective: every
        rank makes it at the same call); later, checks that the call is on that GPU."""
        if self._device is None:
            refuse_capture(
                stream, "a communicator's first collective on device buffers (it sets up peer memory: "
                "collective, with device synchronization)", "make one such call with it before capturing",
                comm=self.mpi)
            self._open(device)
        elif device != self._device:
            raise InvalidBufferError(f"hpcolls: buffer is on GPU {device}, this communicator on GPU {self._device}")

    def _open(self, device):
        self._device = device
        if self._cfg.algo in ("nccl", "mpi"):
            self._native_off = f"HPCOLLS_ALGO={self._cfg.algo}"
        else:
            try:
                nodes = node_layout(self.mpi, self._cfg)
                if nodes is None:
                    self._native, self._native_off = open_native(self.mpi, self._cfg, device)
                else:
                    self._hier, self._native_off = open_path(self.mpi, self._cfg, nodes, device)
            except Exception:
                self._device = None  # not opened: the next call tries again (and says why again)
                raise
        # The fast path skips validation and the once-per-decision INFO log, so it stays off
        # when either is asked for, and for algos that never use the native kernels. It launches
        # on the flat native path only: a communicator over several nodes, which has none, never
        # gets it, so nothing bypasses the hierarchical path.
        if self._native is not None and not self._cfg.validate and log.level < 2:
            self._install_fast()
        if self._native_off:
            log.info(f"native path off: {self._native_off}")

    def _install_fast(self, full=None):
        """Shadows each collective method the native kernels carry with native code for its common
        call (fast_entry.cpp: the host time of a call is a budget: docs/ARCHITECTURE.md, "Targets
        and floors"); that code hands every other call to `full[name]`, by default the method. A
        method a subclass of hpcolls.Communicator defines itself keeps its definition. Needs cupy's
        plain `_c_contiguous` attribute (cupy 13, 14)."""
        if _CUPY_NDARRAY is None or not hasattr(_CUPY_NDARRAY, "_c_contiguous"):
            return
        native = native_module.load()
        full = full or {}
        for name in native.FAST_ENTRIES:
            method = getattr(type(self), name)
            if getattr(method, "__module__", None) != "hpcolls.communicator":
                continue  # the user's own method (a subclass's), which the entry must not bypass
            setattr(self, name, native.make_fast_entry(
                name, self._native, full.get(name, types.MethodType(method, self)), _CUPY_NDARRAY, MPI.IN_PLACE,
                dtypes.mpi_ops_by_code(), dtypes.numpy_code_pairs(), self._device))

    def _release_native(self):
        """Frees the native communicator, and the native entries that launch on it."""
        self._native.release()
        self._native = None
        for name in native_module.load().FAST_ENTRIES:
            self.__dict__.pop(name, None)

    def _nccl_path(self, stream):
        """The NCCL path (routes/nccl.py), set up on first use: collective, refusing a capturing stream."""
        if self._nccl is None:
            refuse_capture(
                stream, "a communicator's first message too large for the native path sets up its NCCL path "
                "(collective, with NCCL's own device set-up), which", "make one such call before capturing",
                comm=self.mpi)
            from .routes.nccl import NcclPath
            self._nccl = NcclPath(self.mpi, self._device)
        return self._nccl

    def _nccl_takes(self, collective, call, stream):
        """(whether NCCL makes `call`, a DeviceCall of `collective`, why not)."""
        return self._nccl_path(stream).takes(collective, call)

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
            self._hier.close()  # collective too; frees the node groups
            self._hier = None
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
        """'on', or why the native path is off (None before the first device-buffer call); over
        several nodes, whether the hierarchical path took its place and why."""
        return "on" if self._native is not None else self._native_off

    def native_comm(self, device):
        """The hpcolls._native.NativeComm carrying this communicator's device-buffer collectives
        on GPU ``device`` (collective the first time: it opens the native path), or None when
        that path is off (``native_path`` says why). For native code that issues its own
        collectives, such as the solver's tridiagonalization loop. None over several nodes: no
        NativeComm spans them (the communicator's own methods take the hierarchical path)."""
        if self._device is None:
            self._open(device)
        elif device != self._device:
            raise InvalidBufferError(f"hpcolls: GPU {device} requested, this communicator is on GPU {self._device}")
        return self._native
