"""AllReduce of device buffers through MPI: the path for ranks that cannot reach each other's
memory, for types/ops the native and NCCL paths do not take, and HPCOLLS_ALGO=mpi.

CUDA-aware MPI gets the device pointers directly (after the caller's stream is drained: MPI is
not stream-ordered). Otherwise the data is staged through host memory. float16 and bfloat16
have no MPI datatype: they are allgathered and reduced on the host in rank order, which gives
the native kernels' exact result.
"""
import numpy as np
from mpi4py import MPI

from . import dtypes, log
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


def _host_copy(buf, stream):
    host = np.empty(buf.count, dtype=dtypes.numpy_dtype(buf.code))
    if buf.count:
        _native().memcpy(host.ctypes.data, buf.ptr, buf.nbytes, stream)
    return host


def bcast(comm, buf, root, stream):
    """Bcast of a device buffer: directly with a CUDA-aware MPI, else staged through host memory
    (the copies are ordered on `stream`, so earlier work on it is seen and later work waits)."""
    if cuda_aware()[0]:
        _native().stream_synchronize(stream)
        comm.Bcast([_ADDRESS_BUFFER.fromaddress(buf.ptr, buf.nbytes), MPI.BYTE], root=root)
        return
    is_root = comm.Get_rank() == root
    host = _host_copy(buf, stream) if is_root else np.empty(buf.count, dtype=dtypes.numpy_dtype(buf.code))
    comm.Bcast([host, MPI.BYTE], root=root)
    if not is_root and buf.count:
        _native().memcpy(buf.ptr, host.ctypes.data, buf.nbytes, stream)


def allreduce(comm, send, recv, op, mpi_op, stream):
    """send may be None (in place). Blocks the host until the result is in `recv`."""
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
