"""The collectives the native kernels carry, one class each: Allreduce, Bcast, Reduce, Allgather,
Reduce_scatter_block and Reduce_scatter. Each knows three things about its own call:

- `read`: how mpi4py's arguments, device buffers, read as one DeviceCall (addresses, the count
  and type the native plan is about, op, root, blocks), or why MPI must interpret them instead: a
  host buffer, a derived datatype, displacements or vector counts, an op the kernels do not have;
- `launch` and `piece`: how the native kernels take the call whole, and one element range of it
  (every element is still combined in rank order, so pieces are the whole call bit for bit);
- `nccl`: which NcclPath call makes it.

Where a call goes (native whole, NCCL, native in pieces, MPI) is decided once, for all of them,
in hpcolls/routes/native.py. Data-moving collectives (Bcast, Allgather) take any element type
as bytes; reductions the types and ops the kernels carry (dtypes.OPS_OF).
"""
from dataclasses import dataclass

from mpi4py import MPI

from .. import buffers, dtypes
from ..errors import HpcollsError, InvalidBufferError


@dataclass(frozen=True)
class DeviceCall:
    """One collective call on device buffers, as the native kernels, NCCL and the host reduction
    take it. Data-moving calls count bytes (code U8)."""
    send: int           # this rank's input (in place: where the input is)
    recv: int           # the result (Bcast: the buffer; Reduce off the root: the input's address)
    count: int          # elements the plan is about: the message (Allgather: one rank's block;
                        # Reduce_scatter: the largest block)
    code: int           # native element type
    op: int             # native op (SUM where nothing is reduced)
    device: int
    in_place: bool = False
    root: int = 0
    counts: tuple = ()  # Reduce_scatter(_block): elements of each rank's block, back to back

    @property
    def nbytes(self):
        return self.count * dtypes.ITEMSIZE[self.code]

    @property
    def displs(self):
        """Where each rank's block starts in the input, in elements (Reduce_scatter)."""
        out, at = [], 0
        for c in self.counts:
            out.append(at)
            at += c
        return out


def _device(spec, what):
    """The DeviceArray of a buffer spec, or why MPI takes the call (host memory)."""
    arr = buffers.device_array(spec)
    return arr if arr is not None else f"the {what} is host memory"


def _read(spec, what, reader, blocks=1):
    """reader(spec, array, blocks) for a device buffer, or why MPI takes the call."""
    arr = _device(spec, what)
    if isinstance(arr, str):
        return arr
    found = reader(spec, arr, blocks)
    return found if found is not None else (f"the {what}'s spec is one MPI must read (a derived datatype, "
                                            "displacements or vector counts, an element type the kernels lack, or "
                                            "no whole number of blocks)")


def _op(code, op):
    """The native op code of `op` for elements of `code`, or why MPI takes it; raises for a pair
    that has no meaning, as the kernels would (and MPI cannot help: no datatype, or no such op)."""
    opc = dtypes.op_code(op)
    if code in (dtypes.F16, dtypes.BF16) and (opc is None or opc not in dtypes.OPS_OF[code]):
        raise ValueError(f"hpcolls: {op} is not supported for {dtypes.NAMES[code]} (SUM, PROD, MIN, MAX are; "
                         "MPI has no datatype for it)")
    if code in dtypes.COMPLEX and opc in (dtypes.MIN, dtypes.MAX):
        raise ValueError("hpcolls: MPI.MIN/MPI.MAX are not defined for complex numbers")
    if opc is None or opc not in dtypes.OPS_OF[code]:
        return f"{dtypes.NAMES[code]} with this op is not a pair the kernels carry"
    return opc


def _check_pair(send, recv, count):
    """Raises unless `send` holds `count` elements of recv's type on recv's GPU, not overlapping it."""
    if send.count != count or send.code != recv.code:
        raise InvalidBufferError(
            f"hpcolls: send buffer ({send.count} x {dtypes.NAMES[send.code]}) and receive buffer "
            f"({recv.count} x {dtypes.NAMES[recv.code]}) do not match")
    if send.device != recv.device:
        raise InvalidBufferError(f"hpcolls: send buffer on GPU {send.device}, receive buffer on GPU {recv.device}")
    if send.ptr != recv.ptr and send.ptr < recv.ptr + recv.nbytes and recv.ptr < send.ptr + send.nbytes:
        raise InvalidBufferError("hpcolls: send and receive buffers overlap (use MPI.IN_PLACE)")


def _reduction(sendbuf, recvbuf, op, send_count=lambda recv: recv.count, send_blocks=1, in_place_blocks=1):
    """(send DeviceBuffer or None in place, recv DeviceBuffer, native op) of a reduction whose
    result goes to recvbuf, or why MPI takes it. send_count(recv): the elements the send buffer
    must hold; in_place_blocks: the blocks recvbuf holds in place (Reduce_scatter_block)."""
    in_place = sendbuf is MPI.IN_PLACE
    recv = _read(recvbuf, "receive buffer", buffers.native_buffer, in_place_blocks if in_place else 1)
    if isinstance(recv, str):
        return recv
    opc = _op(recv.code, op)
    if isinstance(opc, str):
        return opc
    if in_place:
        return None, recv, opc
    send = _read(sendbuf, "send buffer", buffers.native_buffer, send_blocks)
    if isinstance(send, str):
        return send
    _check_pair(send, recv, send_count(recv))
    return (None if send.ptr == recv.ptr else send), recv, opc


class Collective:
    """What the route needs of one collective; subclasses fill it in."""
    method = ""       # mpi4py's name
    native = ""       # the native layer's (hpcolls._native.COLLECTIVES, the plan's index)
    reduces = True

    def read(self, comm, m, args, kwargs):
        """DeviceCall, or why MPI takes the call (a string)."""
        raise NotImplementedError

    def refusal(self, call):
        """Why the kernels take this call at no size (None: they take it, whole or in pieces)."""
        return None

    def launch(self, nc, call, stream):
        """Whether the native kernels took the whole call (nothing launched when not)."""
        return self.piece(nc, call, 0, call.count, stream) >= 0

    def piece(self, nc, call, first, n, stream):
        """Elements [first, first + n) of the call (of each block) through the native kernels;
        the native call's return (< 0: not taken, nothing launched)."""
        raise NotImplementedError

    def in_pieces(self, nc, call, piece_bytes, stream):
        """The call as native calls of `piece_bytes` each (whole elements), in order on the stream."""
        per = piece_bytes // dtypes.ITEMSIZE[call.code]
        for first in range(0, call.count, per):
            n = min(per, call.count - first)
            if self.piece(nc, call, first, n, stream) < 0:
                raise HpcollsError(f"hpcolls: internal error: the native path refused a piece of {n} elements of "
                                   f"{self.method} (largest piece it takes: {piece_bytes} B)")

    def nccl(self, path, call, stream):
        getattr(path, self.native)(call, stream)

    def host_result(self, call, rank):
        """Reductions through the host (float16, bfloat16): (input elements, first result element
        this rank keeps, how many, whether it stores them)."""
        return call.count, 0, call.count, True


def _offset(call, first):
    return first * dtypes.ITEMSIZE[call.code]


class Allreduce(Collective):
    method, native = "Allreduce", "allreduce"

    def read(self, comm, m, args, kwargs):
        found = _reduction(*(m.argument(args, kwargs, p) for p in ("sendbuf", "recvbuf", "op")))
        if isinstance(found, str):
            return found
        send, recv, opc = found
        return DeviceCall(recv.ptr if send is None else send.ptr, recv.ptr, recv.count, recv.code, opc, recv.device,
                          send is None)

    def piece(self, nc, call, first, n, stream):
        at = _offset(call, first)
        return nc.allreduce(call.send + at, call.recv + at, n, call.code, call.op, stream)


class Bcast(Collective):
    method, native, reduces = "Bcast", "bcast", False

    def read(self, comm, m, args, kwargs):
        buf = _read(m.argument(args, kwargs, "buf"), "buffer", buffers.byte_buffer)
        root = m.argument(args, kwargs, "root")
        if isinstance(buf, str):
            return buf
        if not 0 <= root < MPI.Comm.Get_size(comm):
            return f"root {root} is not a rank of this communicator (MPI says so)"
        return DeviceCall(buf.ptr, buf.ptr, buf.nbytes, dtypes.U8, dtypes.SUM, buf.device, True, int(root))

    def piece(self, nc, call, first, n, stream):
        return nc.bcast(call.recv + first, n, call.root, stream)


class Reduce(Collective):
    method, native = "Reduce", "reduce"

    def read(self, comm, m, args, kwargs):
        sendbuf, recvbuf, op, root = (m.argument(args, kwargs, p) for p in ("sendbuf", "recvbuf", "op", "root"))
        if not 0 <= root < MPI.Comm.Get_size(comm):
            return f"root {root} is not a rank of this communicator (MPI says so)"
        if MPI.Comm.Get_rank(comm) == root:
            found = _reduction(sendbuf, recvbuf, op)
            if isinstance(found, str):
                return found
            send, recv, opc = found
        else:  # the receive buffer is not read here
            if sendbuf is MPI.IN_PLACE:
                return "MPI.IN_PLACE off the root (MPI says what is wrong)"
            send = _read(sendbuf, "send buffer", buffers.native_buffer)
            if isinstance(send, str):
                return send
            opc, recv = _op(send.code, op), send
            if isinstance(opc, str):
                return opc
        return DeviceCall(recv.ptr if send is None else send.ptr, recv.ptr, recv.count, recv.code, opc, recv.device,
                          send is None, int(root))

    def piece(self, nc, call, first, n, stream):
        at = _offset(call, first)
        return nc.reduce(call.send + at, call.recv + at, n, call.code, call.op, call.root, stream)

    def host_result(self, call, rank):
        return call.count, 0, call.count, rank == call.root


class Allgather(Collective):
    method, native, reduces = "Allgather", "allgather", False

    def read(self, comm, m, args, kwargs):
        sendbuf, recvbuf = (m.argument(args, kwargs, p) for p in ("sendbuf", "recvbuf"))
        size, rank = MPI.Comm.Get_size(comm), MPI.Comm.Get_rank(comm)
        recv = _read(recvbuf, "receive buffer", buffers.byte_buffer, size)
        if isinstance(recv, str):
            return recv
        if sendbuf is MPI.IN_PLACE:
            return DeviceCall(recv.ptr + rank * recv.nbytes, recv.ptr, recv.nbytes, dtypes.U8, dtypes.SUM, recv.device,
                              True)
        send = _read(sendbuf, "send buffer", buffers.byte_buffer)
        if isinstance(send, str):
            return send
        if send.nbytes != recv.nbytes:
            return f"{send.nbytes} bytes sent and {recv.nbytes} received per rank (MPI says what is wrong)"
        if send.device != recv.device:
            raise InvalidBufferError(f"hpcolls: send buffer on GPU {send.device}, receive buffer on GPU {recv.device}")
        return DeviceCall(send.ptr, recv.ptr, recv.nbytes, dtypes.U8, dtypes.SUM, recv.device,
                          send.ptr == recv.ptr + rank * recv.nbytes)

    def piece(self, nc, call, first, n, stream):
        return nc.allgather(call.send + first, call.recv + first, n, call.nbytes, stream)


class ReduceScatter(Collective):
    """Reduce_scatter with counts; the block variant below is equal counts."""
    method, native = "Reduce_scatter", "reduce_scatter"

    def read(self, comm, m, args, kwargs):
        sendbuf, recvbuf, counts, op = (m.argument(args, kwargs, p) for p in ("sendbuf", "recvbuf", "recvcounts", "op"))
        size, rank = MPI.Comm.Get_size(comm), MPI.Comm.Get_rank(comm)
        if counts is None:
            if sendbuf is MPI.IN_PLACE:
                return "recvcounts=None in place (MPI says what is wrong)"
            recv = _read(recvbuf, "receive buffer", buffers.native_buffer)
            if isinstance(recv, str):
                return recv
            counts = MPI.Comm.allgather(comm, recv.count)  # as mpi4py does (every rank leaves them out alike)
        try:
            counts = tuple(int(c) for c in counts)
        except (TypeError, ValueError):
            return "recvcounts are not integers (MPI says what is wrong)"
        if len(counts) != size or min(counts) < 0:
            return f"recvcounts {list(counts)} are not one count per rank (MPI says what is wrong)"
        return self._call(sendbuf, recvbuf, op, counts, rank)

    def _call(self, sendbuf, recvbuf, op, counts, rank, in_place_blocks=1):
        total = sum(counts)
        found = _reduction(sendbuf, recvbuf, op, lambda recv: total, in_place_blocks=in_place_blocks)
        if isinstance(found, str):
            return found
        send, recv, opc = found
        if send is not None and recv.count != counts[rank]:
            raise InvalidBufferError(f"hpcolls: receive buffer of {recv.count} elements for a block of {counts[rank]}")
        if send is None and recv.count * in_place_blocks < total:
            raise InvalidBufferError(f"hpcolls: in place, the receive buffer holds {recv.count * in_place_blocks} "
                                     f"elements of the {total} the blocks need")
        return DeviceCall(recv.ptr if send is None else send.ptr, recv.ptr, max(counts), recv.code, opc, recv.device,
                          send is None, counts=counts)

    def refusal(self, call):
        if call.in_place and max(call.counts) > call.counts[0]:
            return ("in place with a block larger than block 0: the result, stored at the receive buffer's start, "
                    "would overwrite input not yet read")
        return None

    def launch(self, nc, call, stream):
        return nc.reduce_scatter(call.send, call.recv, list(call.counts), call.code, call.op, stream) >= 0

    def piece(self, nc, call, first, n, stream):
        at = _offset(call, first)
        counts = [max(0, min(n, c - first)) for c in call.counts]
        return nc.reduce_scatter(call.send + at, call.recv + at, counts, call.code, call.op, stream, call.displs)

    def host_result(self, call, rank):
        return sum(call.counts), call.displs[rank], call.counts[rank], True


class ReduceScatterBlock(ReduceScatter):
    method = "Reduce_scatter_block"

    def read(self, comm, m, args, kwargs):
        sendbuf, recvbuf, op = (m.argument(args, kwargs, p) for p in ("sendbuf", "recvbuf", "op"))
        size = MPI.Comm.Get_size(comm)
        in_place = sendbuf is MPI.IN_PLACE
        recv = _read(recvbuf, "receive buffer", buffers.native_buffer, size if in_place else 1)
        if isinstance(recv, str):
            return recv
        return self._call(sendbuf, recvbuf, op, (recv.count,) * size, MPI.Comm.Get_rank(comm),
                          size if in_place else 1)


COLLECTIVES = {c.method: c for c in (Allreduce(), Bcast(), Reduce(), Allgather(), ReduceScatter(),
                                     ReduceScatterBlock())}
