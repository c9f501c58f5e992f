"""hpcolls.Communicator: an mpi4py communicator whose collectives on device buffers take the
fastest correct path. Existing code changes one line: `comm = hpcolls.wrap(MPI.COMM_WORLD)`.

Host buffers go to mpi4py unchanged. Device buffers of Allreduce go to the native barrier-free
kernels while the message fits their scratch, then to NCCL (when every rank has its own GPU),
else to the native kernels in pieces, and to MPI only where the native path is off or the op is
not one the kernels carry; those of the other buffer calls listed in _BUFFER_ARGS go to MPI,
staged through host memory unless MPI is CUDA-aware (fallback_mpi.device_call). Every attribute
this class does not define is the wrapped mpi4py communicator's.
"""
import atexit
import types
import weakref

from mpi4py import MPI

from . import buffers, dtypes, fallback_mpi, log
from .capture import refuse_capture
from .config import Config
from .errors import HpcollsError, InvalidBufferError, ValidationError
from .mpi_support import cuda_aware
from .peer_group import open_native

_live = weakref.WeakSet()

try:
    import cupy as _cupy
    _current_stream = _cupy.cuda.get_current_stream
    _CUPY_NDARRAY = _cupy.ndarray
except ImportError:
    _current_stream = None
    _CUPY_NDARRAY = None


def _stream_ptr(stream):
    """A stream argument as a cudaStream_t integer: None means cupy's current stream."""
    if stream is None:
        return _current_stream().ptr if _current_stream is not None else 0
    candidates = (getattr(stream, attr, None) for attr in ("ptr", "cuda_stream", "handle"))
    value = stream if isinstance(stream, int) else next((v for v in candidates if isinstance(v, int)), None)
    if value is None:
        raise TypeError(f"hpcolls: cannot use {type(stream).__name__} as a CUDA stream (pass a cupy/torch stream or an int)")
    if value < 0:
        raise ValueError(f"hpcolls: a CUDA stream handle is a non-negative integer, not {value}")
    return value


# The mpi4py buffer calls this class wraps, by their positional parameters: a buffer that the
# call reads ("r") or writes ("w"); "x/y" is x at the root and y elsewhere ("-": ignored there);
# "root"; None for any other parameter (trailing ones are left out).
_BUFFER_ARGS = {
    "Bcast": ("r/w", "root"),
    "Reduce": ("r", "w/-", None, "root"),
    "Gather": ("r", "w/-", "root"),
    "Scatter": ("r/-", "w", "root"),
    "Allgather": ("r", "w"),
    "Alltoall": ("r", "w"),
    "Reduce_scatter_block": ("r", "w"),
    "Reduce_scatter": ("r", "w"),
    "Send": ("r",),
    "Recv": ("w",),
    "Sendrecv": ("r", None, None, "w"),
}
_POINT_TO_POINT = ("Send", "Recv", "Sendrecv")
_ROLE_NAMES = {"r": "send", "w": "receive"}


def _buffer_roles(name, args, me):
    """{position: "r" or "w"} of the buffer arguments of `name`(*args) that count on this process
    (MPI.IN_PLACE and None are not buffers). `me` is its rank, or MPI.ROOT on an
    intercommunicator, where the root passes root=MPI.ROOT and every other process is not it."""
    kinds = _BUFFER_ARGS[name]
    root = args[kinds.index("root")] if "root" in kinds else None
    roles = {}
    for pos, kind in enumerate(kinds):
        if kind in (None, "root") or args[pos] is None or args[pos] is MPI.IN_PLACE:
            continue
        kind = kind.split("/")[me != root] if "/" in kind else kind
        if kind != "-":
            roles[pos] = kind
    return roles


class Communicator:
    """Drop-in for an mpi4py communicator.

    Keyword arguments override the environment for this communicator: `algo` (HPCOLLS_ALGO),
    `timeout` in seconds (HPCOLLS_TIMEOUT), `validate` (HPCOLLS_VALIDATE).

    Device buffers are safe in Allreduce, Bcast, Allgather, Alltoall, Reduce, Reduce_scatter,
    Reduce_scatter_block, Gather and Scatter: with an MPI that is not CUDA-aware they are staged
    through host memory. These take mpi4py's arguments plus `stream=` (the CUDA stream the call
    is ordered after; cupy's current one by default). Send, Recv and Sendrecv pass device
    buffers to a CUDA-aware MPI and raise InvalidBufferError with any other. Every other method
    is the mpi4py communicator's, unchanged: Isend, Irecv, Sendrecv_replace, persistent and
    nonblocking calls, the v/w variants (Gatherv, Allgatherv, Alltoallv, ...), Scan, Exscan and
    the like hand device pointers straight to MPI, so they need a CUDA-aware MPI (else copy the
    data to host memory first).
    """

    def __init__(self, comm=None, *, algo=None, timeout=None, validate=None):
        if isinstance(comm, Communicator):
            comm = comm.mpi
        self._comm = MPI.COMM_WORLD if comm is None else comm
        self._cfg = Config.from_env(self._comm.Get_size(), algo, timeout, validate)
        self._native = None
        self._native_off = None      # reason the native path is off, once decided
        self._device = None
        self._nccl = None
        log.set_rank(MPI.COMM_WORLD.Get_rank())  # logs name world ranks, whatever the sub-communicator
        _live.add(self)

    # -- mpi4py compatibility ------------------------------------------------------------------
    @property
    def mpi(self):
        """The wrapped mpi4py communicator."""
        return self._comm

    def __getattr__(self, name):
        return getattr(self._comm, name)

    def __eq__(self, other):
        other = other.mpi if isinstance(other, Communicator) else other
        return self._comm == other

    __hash__ = object.__hash__

    def __repr__(self):
        return f"<hpcolls.Communicator rank {self._comm.Get_rank()}/{self._comm.Get_size()} algo={self._cfg.algo}>"

    def _wrap(self, comm):
        if comm == MPI.COMM_NULL:
            return comm
        return Communicator(comm, algo=self._cfg.algo, timeout=self._cfg.timeout_s, validate=self._cfg.validate)

    def Dup(self, *args, **kwargs):
        return self._wrap(self._comm.Dup(*args, **kwargs))

    def Clone(self):
        return self._wrap(self._comm.Clone())

    def Split(self, *args, **kwargs):
        return self._wrap(self._comm.Split(*args, **kwargs))

    def Split_type(self, *args, **kwargs):
        return self._wrap(self._comm.Split_type(*args, **kwargs))

    def Create(self, *args, **kwargs):
        return self._wrap(self._comm.Create(*args, **kwargs))

    def Free(self):
        """Releases hpcolls' resources (collective), then frees the MPI communicator."""
        self.close()
        self._comm.Free()

    def close(self):
        """Releases scratch, peer mappings and NCCL (collective; the MPI communicator stays)."""
        if self._native is not None:
            self._native.synchronize()
            self._comm.Barrier()  # no peer may still be storing into our scratch
            self._release_native()
        if self._nccl is not None:
            self._nccl.destroy()
            self._nccl = None
        self._native_off = "communicator closed"

    # -- collectives ---------------------------------------------------------------------------
    def Allreduce(self, sendbuf, recvbuf, op=MPI.SUM, stream=None):
        """mpi4py's Allreduce. Once the native path is open, the instance's own `Allreduce` is
        native code that launches the common call (cupy arrays on this GPU, a type and op the
        kernels carry, cupy's current stream) and hands every other call to this method."""
        recv = buffers.resolve(recvbuf)
        if recv is None:
            if sendbuf is not MPI.IN_PLACE and buffers.resolve(sendbuf) is not None:
                raise InvalidBufferError("hpcolls: send buffer is on the GPU but receive buffer in host memory")
            if log.level >= 2:
                log.info_once(("host",), "allreduce on host buffers: handed to mpi4py unchanged")
            return self._comm.Allreduce(sendbuf, recvbuf, op)
        send = None
        if sendbuf is not MPI.IN_PLACE:
            send = buffers.resolve(sendbuf)
            if send is None:
                raise InvalidBufferError("hpcolls: receive buffer is on the GPU but send buffer in host memory")
            _check_pair(send, recv)
            if send.ptr == recv.ptr:
                send = None
        opc = dtypes.op_code(op)
        if recv.code in dtypes.COMPLEX and opc in (dtypes.MIN, dtypes.MAX):
            raise ValueError("hpcolls: MPI.MIN/MPI.MAX are not defined for complex numbers")
        if opc is None and recv.code in (dtypes.F16, dtypes.BF16):
            raise ValueError(f"hpcolls: {op} is not supported for {dtypes.NAMES[recv.code]} (SUM, PROD, MIN, MAX are)")
        if self._cfg.validate:
            self._validate("Allreduce", recv.count, recv.code, opc if opc is not None else str(op))
        return self._allreduce_device(send, recv, op, opc, _stream_ptr(stream))

    def Bcast(self, buf, root=0, stream=None):
        """mpi4py's Bcast; a device buffer goes through MPI directly when it is CUDA-aware, else
        staged through host memory, instead of handing a device pointer to an MPI that would
        dereference it on the host. The same holds for the buffer calls below."""
        return self._call("Bcast", stream, buf, root)

    def Reduce(self, sendbuf, recvbuf, op=MPI.SUM, root=0, *, stream=None):
        return self._call("Reduce", stream, sendbuf, recvbuf, op, root)

    def Gather(self, sendbuf, recvbuf, root=0, *, stream=None):
        return self._call("Gather", stream, sendbuf, recvbuf, root)

    def Scatter(self, sendbuf, recvbuf, root=0, *, stream=None):
        return self._call("Scatter", stream, sendbuf, recvbuf, root)

    def Allgather(self, sendbuf, recvbuf, *, stream=None):
        return self._call("Allgather", stream, sendbuf, recvbuf)

    def Alltoall(self, sendbuf, recvbuf, *, stream=None):
        return self._call("Alltoall", stream, sendbuf, recvbuf)

    def Reduce_scatter_block(self, sendbuf, recvbuf, op=MPI.SUM, *, stream=None):
        return self._call("Reduce_scatter_block", stream, sendbuf, recvbuf, op)

    def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=MPI.SUM, *, stream=None):
        return self._call("Reduce_scatter", stream, sendbuf, recvbuf, recvcounts, op)

    def Send(self, buf, dest, tag=0, *, stream=None):
        return self._call("Send", stream, buf, dest, tag)

    def Recv(self, buf, source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=None, *, stream=None):
        return self._call("Recv", stream, buf, source, tag, status)

    def Sendrecv(self, sendbuf, dest, sendtag=0, recvbuf=None, source=MPI.ANY_SOURCE, recvtag=MPI.ANY_TAG,
                 status=None, *, stream=None):
        return self._call("Sendrecv", stream, sendbuf, dest, sendtag, recvbuf, source, recvtag, status)

    def _call(self, name, stream, *args):
        """mpi4py's `name`(*args); device buffers in it go through fallback_mpi.device_call."""
        call = getattr(self._comm, name)
        roles = _buffer_roles(name, args, MPI.ROOT if self._comm.Is_inter() else self._comm.Get_rank())
        arrays = {pos: buffers.device_array(args[pos]) for pos in roles}
        # Bcast given a bare array fills all of it at non-roots: no copy-in needed for that one.
        device = {pos: (arr, roles[pos] == "w",
                        roles[pos] == "w" and name == "Bcast" and not isinstance(args[pos], (list, tuple)))
                  for pos, arr in arrays.items() if arr is not None}
        if not device:
            if log.level >= 2:
                log.info_once((name, "host"), f"{name} on host buffers: handed to mpi4py unchanged")
            return call(*args)
        if len(device) < len(arrays):  # two buffers, one of each kind
            gpu, host = sorted(arrays, key=lambda pos: arrays[pos] is None)
            raise InvalidBufferError(f"hpcolls: {name}: {_ROLE_NAMES[roles[gpu]]} buffer is on the GPU but "
                                     f"{_ROLE_NAMES[roles[host]]} buffer in host memory")
        aware, how = cuda_aware()
        if name in _POINT_TO_POINT and not aware:
            raise InvalidBufferError(f"hpcolls: {name} with a device buffer needs a CUDA-aware MPI and this one is "
                                     f"not ({how}); copy the buffer to host memory (e.g. cupy.asnumpy) and pass that")
        log.info_once((name, "device"), f"{name} on device buffers: " + (
            f"MPI directly, after the stream ({how})" if aware else f"MPI, staged through host memory ({how})"))
        return fallback_mpi.device_call(call, args, device, _stream_ptr(stream))

    def _allreduce_device(self, send, recv, op, opc, stream):
        if self._device is None:
            refuse_capture(
                stream, "a communicator's first Allreduce on device buffers (it sets up peer memory: "
                "collective, with device synchronization)", "make one Allreduce with it before capturing",
                comm=self._comm)
            self._open(recv.device)
        elif recv.device != self._device:
            raise InvalidBufferError(f"hpcolls: buffer is on GPU {recv.device}, this communicator on GPU {self._device}")
        algo = self._cfg.algo
        if self._native is not None and opc is not None and algo in ("auto", "oneshot", "twoshot"):
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
            fallback_mpi.allreduce(self._comm, send, recv, opc, op, stream)
        return None

    def _route_past_native(self, code, opc, stream):
        """(route, why) for an Allreduce of `code` and op code `opc` (None: an op the kernels do
        not carry) that the native path does not take whole: "nccl" (HPCOLLS_ALGO auto or nccl,
        where NCCL runs and has the type and op; set up here on first use), else "pieces" (the
        native kernels in pieces: microseconds per MiB where MPI, staged through host memory,
        takes milliseconds; docs/PERFORMANCE.md), else "mpi"; `why` says why not the ones before."""
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

    def _open(self, device):
        self._device = device
        if self._cfg.algo in ("nccl", "mpi"):
            self._native_off = f"HPCOLLS_ALGO={self._cfg.algo}"
        else:
            self._native, self._native_off = open_native(self._comm, self._cfg, device)
        # The fast path skips validation and the once-per-decision INFO log, so it stays off
        # when either is asked for, and for algos that never use the native kernels.
        if self._native is not None and not self._cfg.validate and log.level < 2:
            self._install_fast()
        if self._native_off:
            log.info(f"native path off: {self._native_off}")

    def _install_fast(self, full=None):
        """Shadows the Allreduce method with native code for its common call (fast_allreduce.cpp:
        the host time of a call is a budget, DESIGN.md); that code hands every other call to
        `full`, by default the method. Needs cupy's plain `_c_contiguous` attribute (cupy 13, 14)."""
        if _CUPY_NDARRAY is None or not hasattr(_CUPY_NDARRAY, "_c_contiguous"):
            return
        from ._native import make_fast_allreduce
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
                comm=self._comm)
            from ._native import device_info
            from .fallback_nccl import NcclPath
            self._nccl = NcclPath(self._comm, device_info(self._device)["uuid"])
        return self._nccl

    def _validate(self, name, count, code, op):
        mine = (count, dtypes.NAMES[code], op)
        every = self._comm.allgather(mine)
        if any(e != every[0] for e in every):
            table = ", ".join(f"rank {r}: count={c} dtype={d} op={o}" for r, (c, d, o) in enumerate(every))
            raise ValidationError(f"hpcolls: ranks disagree on {name} ({table})")

    def synchronize(self):
        """Waits for this communicator's last stream and raises if a collective timed out."""
        if self._native is not None:
            self._native.synchronize()

    def check(self):
        """Raises CollectiveTimeout if an earlier collective timed out (no device wait)."""
        if self._native is not None:
            self._native.check()

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


def _check_pair(send, recv):
    if send.count != recv.count or send.code != recv.code:
        raise InvalidBufferError(
            f"hpcolls: send buffer ({send.count} x {dtypes.NAMES[send.code]}) and receive buffer "
            f"({recv.count} x {dtypes.NAMES[recv.code]}) differ")
    if send.device != recv.device:
        raise InvalidBufferError(f"hpcolls: send buffer on GPU {send.device}, receive buffer on GPU {recv.device}")
    if send.ptr != recv.ptr and send.ptr < recv.ptr + recv.nbytes and recv.ptr < send.ptr + send.nbytes:
        raise InvalidBufferError("hpcolls: send and receive buffers overlap (use MPI.IN_PLACE)")


def wrap(comm=None, **kwargs):
    """hpcolls.wrap(MPI.COMM_WORLD): the one-line switch."""
    return Communicator(comm, **kwargs)


@atexit.register
def _release_all():
    # Local clean-up only: at exit other ranks may be gone, so nothing collective here.
    for c in list(_live):
        if c._native is not None:
            c._release_native()


