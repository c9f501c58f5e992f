"""Device buffers through MPI: AllReduce where the native and NCCL paths do not take it
(ranks that cannot reach each other's memory, types/ops they lack, HPCOLLS_ALGO=mpi), and every
other buffer call the communicator hands to mpi4py (`device_call`).

CUDA-aware MPI gets the device buffers directly (after the caller's stream is drained: MPI is
not stream-ordered). Otherwise the data is staged through host memory, with the copies ordered
on the caller's stream. For AllReduce, float16 and bfloat16 have no MPI datatype: they are
allgathered and reduced on the host in rank order, which gives the native kernels' exact result.
"""
import numpy as np
from mpi4py import MPI

from . import dtypes, log
from .capture import refuse_capture
from .errors import InvalidBufferError
from .mpi_support import cuda_aware
from .reduction import reduce_in_rank_order

_MPI_TYPES = {dtypes.F32: MPI.FLOAT, dtypes.F64: MPI.DOUBLE, dtypes.C64: MPI.C_FLOAT_COMPLEX,
              dtypes.C128: MPI.C_DOUBLE_COMPLEX, dtypes.I32: MPI.INT32_T, dtypes.I64: MPI.INT64_T,
              dtypes.U32: MPI.UINT32_T, dtypes.U64: MPI.UINT64_T}


# mpi4py 4 names it MPI.buffer; 3.x named it MPI.memory.
_ADDRESS_BUFFER = getattr(MPI, "buffer", None) or MPI.memory


def _native():
    from . import _native
    return _native


def _host_copy(buf, stream, dtype=None):
    """A host array of `dtype` (default: the buffer's element type) holding `buf`'s bytes, copied
    on `stream`, so earlier work on it is seen (a copy into pageable memory returns when done)."""
    dtype = dtypes.numpy_dtype(buf.code) if dtype is None else dtype
    host = np.empty(buf.nbytes // dtype.itemsize, dtype=dtype)
    if buf.nbytes:
        _native().memcpy(host.ctypes.data, buf.ptr, buf.nbytes, stream)
    return host


def device_call(call, args, device, stream):
    """call(*args), an mpi4py buffer call, where `device` = {position in args: (DeviceArray,
    written, filled)} names the arguments that are buffer specs in device memory (`filled`: the
    call overwrites every byte of a written one).

    A CUDA-aware MPI gets the arguments as they are once `stream`'s earlier work is done.
    Otherwise each such array is copied whole into a host array of its dtype, which takes its
    place in the spec (so mpi4py reads counts and datatypes exactly as it would have), and the
    written ones are copied back on `stream` after the call, whose later work then sees them.
    Buffers that are only written are copied in too unless `filled`: MPI may fill only part."""
    refuse_capture(stream, "a call through MPI (where the collectives other than Allreduce go)",
                   "make it outside the capture")
    if cuda_aware()[0]:
        _native().stream_synchronize(stream)
        return call(*args)
    if any(arr.dtype is None for arr, _, _ in device.values()):
        raise InvalidBufferError("hpcolls: a bfloat16 device buffer cannot be staged through host memory for "
                                 "MPI (numpy has no bfloat16 type); use a CUDA-aware MPI or a host copy")
    args, hosts = list(args), {}
    for pos, (arr, _, filled) in device.items():
        hosts[pos] = np.empty(arr.nbytes // arr.dtype.itemsize, arr.dtype) if filled else _host_copy(arr, stream, arr.dtype)
        spec = args[pos]
        args[pos] = [hosts[pos], *spec[1:]] if isinstance(spec, (list, tuple)) else hosts[pos]
    result = call(*args)
    for pos, (arr, written, _) in device.items():
        if written and arr.nbytes:
            _native().memcpy(arr.ptr, hosts[pos].ctypes.data, arr.nbytes, stream)
    return result


def allreduce(comm, send, recv, op, mpi_op, stream):
    """send may be None (in place). Blocks the host until the result is in `recv`."""
    refuse_capture(stream, f"an Allreduce of {recv.nbytes} B through MPI (neither the native path nor NCCL takes it)",
                   "make it outside the capture (HPCOLLS_DEBUG=INFO says why it goes to MPI)")
    native = _native()
    src = recv if send is None else send
    mpi_type = _MPI_TYPES.get(recv.code)
    aware, _ = cuda_aware()
    if mpi_type is not None and aware:
        native.stream_synchronize(stream)
        sendspec = MPI.IN_PLACE if send is None else [_ADDRESS_BUFFER.fromaddress(send.ptr, send.nbytes), send.count, mpi_type]
        comm.Allreduce(sendspec, [_ADDRESS_BUFFER.fromaddress(recv.ptr, recv.nbytes), recv.count, mpi_type], mpi_op)
        return
    host = _host_copy(src, stream)
    if mpi_type is not None:
        comm.Allreduce(MPI.IN_PLACE, [host, mpi_type], mpi_op)
        result = host
    else:  # float16 / bfloat16: allgather, then reduce in rank order as the kernels do
        gathered = np.empty((comm.Get_size(), host.size), dtype=host.dtype)
        comm.Allgather([host, MPI.BYTE], [gathered, MPI.BYTE])
        result = reduce_in_rank_order(recv.code, op, list(gathered))
    if recv.count:
        native.memcpy(recv.ptr, np.ascontiguousarray(result).ctypes.data, recv.nbytes, stream)
    log.trace(f"allreduce via MPI, {recv.nbytes} B {dtypes.NAMES[recv.code]}, staged through host")
