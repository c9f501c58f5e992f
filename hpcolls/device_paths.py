"""The paths a communicator's device buffers take past MPI: its flat native path (the
hpcolls._native.NativeComm: scratch and peer mappings), the NCCL communicator beside it, and,
where the ranks span several nodes (real, or emulated with HPCOLLS_NODE_SIZE), the hierarchical
path (hpcolls/hierarchy/) in place of the flat native one, which is then never opened (CUDA IPC
reaches one node only). Opened collectively by the first collective on device buffers the native
route carries (hpcolls/routes/native.py decides where each call goes; this holds what it needs).

A DevicePaths is what the routes see of a communicator beyond MPI: the communicator hands it to
them through its public `device_paths(device, stream)`, which opens it at the first call, and
its `config` and `staging_pool` are the rest of what they read.
"""
from . import log
from .capture import refuse_capture
from .hierarchy import node_layout, open_path
from .peer_group import open_native
from .routes.nccl import NcclPath


class DevicePaths:
    """One communicator's device paths: none open until `open` (collective) decides which exist
    and why the others do not."""

    def __init__(self):
        self.native = None     # the flat native path's NativeComm, or None
        self.hierarchy = None  # the HierarchicalPath (hpcolls/hierarchy/), where the ranks span nodes
        self.nccl = None       # the NcclPath (routes/nccl.py), set up at first use by nccl_path()
        self.off = None        # why the native path is off, once decided
        self.device = None     # the GPU the paths were opened on (None: not opened)
        self.config = None     # the communicator's Config they were opened under
        self.mpi = None        # the plain mpi4py communicator they span

    def open(self, mpi, config, device):
        """Opens the paths over `mpi`, a plain mpi4py communicator, on GPU `device` under `config`;
        collective. One that fails is left unopened: the next call tries again (and says why again)."""
        self.device, self.config, self.mpi = device, config, mpi
        if config.algo in ("nccl", "mpi"):
            self.off = f"HPCOLLS_ALGO={config.algo}"
        else:
            try:
                nodes = node_layout(mpi, config)
                if nodes is None:
                    self.native, self.off = open_native(mpi, config, device)
                else:
                    self.hierarchy, self.off = open_path(mpi, config, nodes, device)
            except Exception:
                self.device = None
                raise
        if self.off:
            log.info(f"native path off: {self.off}")

    def nccl_path(self, stream):
        """The NCCL path (routes/nccl.py), set up on first use: collective, refusing a capturing stream."""
        if self.nccl is None:
            refuse_capture(
                stream, "a communicator's first message too large for the native path sets up its NCCL path "
                "(collective, with NCCL's own device set-up), which", "make one such call before capturing",
                comm=self.mpi)
            self.nccl = NcclPath(self.mpi, self.device)
        return self.nccl

    def release_native(self):
        """Local: frees the native communicator."""
        self.native.release()
        self.native = None

    def close(self):
        """Releases NCCL and the hierarchical path (collective; the caller has released the native
        communicator first) and marks the paths closed."""
        if self.nccl is not None:
            self.nccl.destroy()
            self.nccl = None
        if self.hierarchy is not None:
            self.hierarchy.close()  # collective too; frees the node groups
            self.hierarchy = None
        self.off = "communicator closed"

    def synchronize(self):
        """Waits for the last stream of every open path; raises if a collective timed out."""
        if self.native is not None:
            self.native.synchronize()
        if self.hierarchy is not None:
            self.hierarchy.synchronize()

    def check(self):
        """Raises CollectiveTimeout if an earlier collective of an open path timed out (no device wait)."""
        if self.native is not None:
            self.native.check()
        if self.hierarchy is not None:
            self.hierarchy.check()
