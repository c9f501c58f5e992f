"""hpcolls' device API from Python (docs/DEVICE_API.md): the plain struct a CUDA kernel needs to
call hpcolls::device::allreduce / broadcast / allgather itself (native/include/hpcolls/device/),
for one communicator on this rank.

``Communicator.device_comm(device)`` returns a ``DeviceComm``: the bytes of the C struct
``hpcolls_device_comm_t`` (native/include/hpcolls/device/comm.h) as the native core filled them
(``NativeComm::device_comm``, the same code the PMPI library's ``hpcolls_device_comm`` and the C
entry's ``device_comm`` call), its fields read through the layout the native module reports, and
the size limit of each operation. A kernel takes the struct by value (``numpy()``: a structured
scalar with the C layout) or by pointer (``to_device(cupy)``: the bytes in device memory).
"""
import struct

from . import native_module
from .errors import HpcollsError


class DeviceApiUnavailable(HpcollsError):
    """The communicator has no native path on this rank (no GPU, the native module not built,
    peers not reachable, several nodes, HPCOLLS_ALGO=nccl/mpi...): the message says why."""


class DeviceComm:
    """One communicator's ``hpcolls_device_comm_t`` on this rank. Valid until the communicator is
    closed or freed. Attributes: ``rank``, ``size``, ``scratch`` (each rank's LL scratch as mapped
    here), ``counters`` and ``error_record`` (device addresses of the epoch counters and of the
    host-mapped error record), ``half_bytes``, ``timeout_ns``, ``max_bytes`` ({"allreduce",
    "allgather", "broadcast"}: the largest message per rank each carries), ``raw`` (the bytes)."""

    def __init__(self, raw):
        native = native_module.load()
        raw = bytes(raw)
        if len(raw) != native.DEVICE_COMM_BYTES:
            raise ValueError(f"hpcolls: a device struct is {native.DEVICE_COMM_BYTES} bytes, not {len(raw)}")
        layout = native.DEVICE_COMM_LAYOUT

        def field(name, code):
            offset, size = layout[name]
            values = struct.unpack_from(f"<{size // struct.calcsize(code)}{code}", raw, offset)
            return values if len(values) > 1 else values[0]

        self.raw = raw
        self.version = native.DEVICE_API_VERSION
        self.rank, self.size = field("rank", "i"), field("nranks", "i")
        self.scratch = field("scratch", "Q")[:self.size]
        self.counters, self.error_record = field("counters", "Q"), field("host_error", "Q")
        self.half_bytes, self.timeout_ns = field("half_bytes", "Q"), field("timeout_ns", "Q")
        self.max_bytes = dict(native.device_max_bytes(self.half_bytes, self.size))

    @staticmethod
    def numpy_dtype():
        """The C struct's layout as a numpy structured dtype (offsets and size from the native
        module), for a kernel argument passed by value (cupy.RawKernel takes numpy.void)."""
        import numpy as np
        native = native_module.load()
        layout = native.DEVICE_COMM_LAYOUT
        kinds = {"scratch": ("u8", layout["scratch"][1] // 8), "counters": ("u8", 1), "host_error": ("u8", 1),
                 "half_bytes": ("u8", 1), "timeout_ns": ("u8", 1), "rank": ("i4", 1), "nranks": ("i4", 1)}
        names = list(layout)
        formats = [kinds[n][0] if kinds[n][1] == 1 else (kinds[n][0], kinds[n][1]) for n in names]
        return np.dtype({"names": names, "formats": formats, "offsets": [layout[n][0] for n in names],
                         "itemsize": native.DEVICE_COMM_BYTES})

    def numpy(self):
        """The struct as a numpy structured scalar with the C layout."""
        import numpy as np
        return np.frombuffer(self.raw, dtype=self.numpy_dtype())[0]

    def to_device(self, cupy):
        """The struct's bytes in a new cupy uint8 array on the current device: pass ``.data.ptr``
        (or the array) to a kernel taking ``const hpcolls_device_comm_t*``."""
        import numpy as np
        return cupy.asarray(np.frombuffer(self.raw, dtype=np.uint8))

    def __repr__(self):
        return (f"<hpcolls.DeviceComm rank {self.rank}/{self.size} half_bytes={self.half_bytes} "
                f"max_bytes={self.max_bytes}>")


def device_comm_of(comm, device):
    """``comm.device_comm(device)``'s work: the native path opened (collective the first time), its
    struct read; DeviceApiUnavailable saying why where the path is off."""
    try:
        native = comm.native_comm(device)
    except native_module.NativeModuleMissing as exc:
        raise DeviceApiUnavailable(f"hpcolls: no device API without the native module ({exc})") from exc
    if native is None:
        raise DeviceApiUnavailable(f"hpcolls: no device API on this communicator: its native path is off "
                                   f"({comm.native_path})")
    return DeviceComm(native.device_comm())
