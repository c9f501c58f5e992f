"""Device buffers through host memory, for an MPI that is not CUDA-aware: no device pointer ever
reaches it.

Each device buffer that MPI uses on this rank is copied, whole, on the caller's stream (after
its earlier work) into a host array of the same element type from the communicator's staging
pool, which takes its place in the spec, so that mpi4py reads counts, displacements and
datatypes exactly as it would have. Written buffers are copied in too (MPI may write only part
of one, or read it first with MPI.IN_PLACE), and copied back on the stream once MPI is done:

- a blocking call: when it returns;
- a nonblocking point-to-point call (Isend, Irecv, Isendrecv, a Message's Irecv, ...): when its
  request completes, by whatever completes it (Wait, Test, MPI.Request.Waitall/Testany/... on
  lists): mpi4py holds such a request's buffers and lets go of them at completion, and the copy
  back runs then, as the host array is freed;
- a nonblocking collective: mpi4py 4.1 keeps no reference to its buffers, so nothing would mark
  its completion; it is completed inside the call (the request returned is already complete),
  which gives the same results, but no overlap, and a program that needs the collective to
  progress while it waits on other communication would wait for ever here (docs/DROP_IN.md);
- a persistent call (`*_init`, partitioned) cannot be staged: MPI starts and completes its
  request (Prequest.Start, MPI.Prequest.Startall, MPI.Request.Waitall) without any point where
  hpcolls could copy, so it raises naming the method; where the MPI library lacks the call
  (Open MPI 4.1: MPI-4's persistent collectives and partitioned calls) it raises
  NotImplementedError instead, as mpi4py does with any buffer there.

A buffer MPI ignores on this rank (a non-root's Gather receive buffer, ...) is passed as None.
Reductions of float16 and bfloat16, which have no MPI datatype: `reduce_rank_order` allgathers
them and reduces on the host in rank order, which gives the native kernels' exact result.
"""
import weakref

import numpy as np
from mpi4py import MPI

from .. import dtypes, log, native_module
from ..capture import refuse_capture
from ..errors import InvalidBufferError
from ..methods import BLOCKING, PERSISTENT
from ..reduction import reduce_in_rank_order
from ..staging import pmpi_library


def _respec(spec, host):
    """`spec` with its array replaced by `host`."""
    if isinstance(spec, (list, tuple)):
        return type(spec)((host, *spec[1:]))
    return host


def _host_dtype(method, name, spec, arr):
    if arr.dtype is not None:
        return arr.dtype
    if isinstance(spec, (list, tuple)) and isinstance(spec[-1], MPI.Datatype):
        return np.dtype(np.uint8)  # the spec's datatype decides; only the bytes move
    raise InvalidBufferError(f"hpcolls: {method.name}: a bfloat16 device buffer cannot be staged through host "
                             "memory as it is (numpy has no bfloat16); pass [buf, MPI.TYPE] or use a CUDA-aware MPI")


def _finish(pool, arr, written, ptr, block, stream):
    """The copy back of a staged buffer from host address `ptr`, and its block given back: when a
    blocking call returns, or as a request's completion hook (the host array's address, since the
    hook must not hold the array itself)."""
    if written and arr.nbytes:
        native_module.load().memcpy(arr.ptr, ptr, arr.nbytes, stream)
    pool.give_back(block)


def call(pool, method, base, target, args, kwargs, device, unused, stream):
    if method.completion == PERSISTENT:
        if pmpi_library.mpi_has(f"MPI_{method.name}") is False:
            raise NotImplementedError(
                f"hpcolls: {method.name}: this MPI library has no MPI_{method.name} (it reports MPI "
                f"{'.'.join(map(str, MPI.Get_version()))}); mpi4py raises NotImplementedError for it with any buffer")
        raise InvalidBufferError(
            f"hpcolls: {method.name} with a device buffer needs a CUDA-aware MPI: a persistent request is started "
            "and completed inside MPI (Start/Startall, Wait/Waitall) with no point where hpcolls could copy the "
            f"buffer through host memory; use the nonblocking {method.name[:-5] if method.name.endswith('_init') else 'call'}"
            " or host buffers")
    refuse_capture(stream, f"{method.name} through MPI, staged through host memory", "make it outside the capture")
    args, kwargs = list(args), dict(kwargs)
    for name in unused:
        method.replace(args, kwargs, name, None)
    staged = []  # (DeviceArray, written, host array, block)
    try:
        for name, (arr, role) in device.items():
            spec = method.argument(args, kwargs, name)
            host, block = pool.take(arr.nbytes, _host_dtype(method, name, spec, arr))
            staged.append((arr, role == "w", host, block))
            if arr.nbytes:
                native_module.load().memcpy(host.ctypes.data, arr.ptr, arr.nbytes, stream)
            method.replace(args, kwargs, name, _respec(spec, host))
        result = base(target, *args, **kwargs)
    except BaseException:
        for _, _, _, block in staged:
            pool.give_back(block)
        raise
    if method.completion == BLOCKING or method.collective:
        if method.completion != BLOCKING:
            log.info_once((method.name, "completed"), f"{method.name} staged: completed inside the call")
            result.Wait()
        for arr, written, host, block in staged:
            _finish(pool, arr, written, host.ctypes.data, block, stream)
        return result
    for arr, written, host, block in staged:
        hook = weakref.finalize(host, _finish, pool, arr, written, host.ctypes.data, block, stream)
        hook.atexit = False  # a request never completed: nothing to copy at exit
    return result


def reduce_rank_order(comm, call, total, first, count, written, stream):
    """A float16/bfloat16 reduction (a DeviceCall, routes/collectives.py) through MPI, which has no
    datatype for them: every rank's `total` input elements (at call.send) allgathered as bytes and
    reduced on the host in rank order, the native kernels' exact result; elements [first, first +
    count) of it stored at call.recv where `written`. Blocks the host until they are there."""
    refuse_capture(stream, f"a {dtypes.NAMES[call.code]} reduction through MPI (neither the native path nor NCCL "
                   "takes it)", "make it outside the capture (HPCOLLS_DEBUG=INFO says why it goes to MPI)")
    native = native_module.load()
    host = np.empty(total, dtypes.numpy_dtype(call.code))
    if host.nbytes:
        native.memcpy(host.ctypes.data, call.send, host.nbytes, stream)
    gathered = np.empty((comm.Get_size(), host.size), dtype=host.dtype)
    MPI.Intracomm.Allgather(comm, [host, MPI.BYTE], [gathered, MPI.BYTE])
    result = np.ascontiguousarray(reduce_in_rank_order(call.code, call.op, list(gathered[:, first:first + count])))
    if written and result.nbytes:
        native.memcpy(call.recv, result.ctypes.data, result.nbytes, stream)
    log.trace(f"{total} {dtypes.NAMES[call.code]} through MPI, reduced on the host in rank order")
