"""Buffer arguments of collectives, resolved to (pointer, count, dtype code, device).

Accepted, as mpi4py accepts them: an array (cupy, anything with __cuda_array_interface__,
torch tensors, DLPack objects, numpy/host buffers), `[buf, MPI.DOUBLE]`, `[buf, count,
MPI.DOUBLE]`, and MPI.IN_PLACE for the send buffer. Host buffers are not resolved here: the
communicator hands them to mpi4py unchanged.
"""
from collections import namedtuple

import numpy as np
from mpi4py import MPI

from . import dtypes
from .errors import InvalidBufferError

DeviceBuffer = namedtuple("DeviceBuffer", "ptr count code device nbytes")
DeviceArray = namedtuple("DeviceArray", "ptr nbytes dtype device")  # a whole array; dtype: numpy's, or None

try:  # cupy is optional; its ndarray gets a fast path (the common case on GPU)
    import cupy as _cupy
    _CUPY_NDARRAY = _cupy.ndarray
except ImportError:
    _cupy = None
    _CUPY_NDARRAY = None

_native_pointer_device = None


def _pointer_device(ptr):
    global _native_pointer_device
    if _native_pointer_device is None:
        from ._native import pointer_device
        _native_pointer_device = pointer_device
    return _native_pointer_device(ptr)


def _from_cupy(a):
    if not a.flags.c_contiguous:
        raise InvalidBufferError("hpcolls: buffer is not C-contiguous; pass a contiguous array (e.g. cupy.ascontiguousarray)")
    return a.data.ptr, a.size, dtypes.code_of_numpy(a.dtype), a.data.device_id, a.nbytes, a.dtype


def _from_cai(obj):
    cai = obj.__cuda_array_interface__
    ptr = cai["data"][0]
    dtype = np.dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    strides = cai.get("strides")
    if strides is not None and count > 1:
        if tuple(strides) != _c_strides(shape, dtype.itemsize):
            raise InvalidBufferError("hpcolls: buffer is not C-contiguous (__cuda_array_interface__ strides)")
    device = _pointer_device(ptr)[1] if ptr else -1
    return ptr, count, dtypes.code_of_numpy(dtype), device, count * dtype.itemsize, dtype


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _from_torch(t):
    if not t.is_contiguous():
        raise InvalidBufferError("hpcolls: tensor is not contiguous; call .contiguous() first")
    name = str(t.dtype).replace("torch.", "")
    code = dtypes.NAMES.index(name) if name in dtypes.NAMES else None
    count = t.numel()
    return t.data_ptr(), count, code, t.device.index, count * t.element_size(), name


def _is_torch_cuda(obj):
    return type(obj).__module__.startswith("torch") and getattr(obj, "is_cuda", False)


def _resolve_array(obj):
    """(ptr, count, code, device, nbytes, dtype-ish) for a device array, or None for host memory."""
    if type(obj) is _CUPY_NDARRAY:
        return _from_cupy(obj)
    if _is_torch_cuda(obj):  # before CAI: torch's CAI refuses bfloat16
        return _from_torch(obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return _from_cai(obj)
    if hasattr(obj, "__dlpack_device__") and _cupy is not None:
        kind = obj.__dlpack_device__()[0]
        if kind in (2, 13):  # kDLCUDA, kDLCUDAManaged
            return _from_cupy(_cupy.from_dlpack(obj))
    return None


def device_array(spec):
    """DeviceArray for the whole array of a buffer spec (the spec itself, or the first item of a
    list/tuple spec) when it is in device memory, else None. Nothing else of the spec is looked
    at: for the calls handed to mpi4py, mpi4py interprets counts and datatypes itself. `dtype` is
    None when numpy has no such type (torch bfloat16)."""
    buf = spec[0] if isinstance(spec, (list, tuple)) and spec else spec
    arr = _resolve_array(buf)
    if arr is None:
        return None
    ptr, _, _, device, nbytes, dtype = arr
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        dtype = None
    return DeviceArray(ptr, nbytes, dtype, device)


def resolve(spec):
    """DeviceBuffer for a device buffer spec, None for a host one (left to mpi4py).

    `[buf, MPI.TYPE]` and `[buf, count, MPI.TYPE]` override the array's own element type the
    way mpi4py does: the count is then taken from the byte size (or given) in units of TYPE.
    """
    datatype = count = None
    buf = spec
    if isinstance(spec, (list, tuple)):
        if not 2 <= len(spec) <= 3:
            raise InvalidBufferError("hpcolls: a buffer spec is [buf, MPI.TYPE] or [buf, count, MPI.TYPE]")
        buf, datatype = spec[0], spec[-1]
        if len(spec) == 3:
            count = spec[1]
            if not isinstance(count, (int, np.integer)):
                raise InvalidBufferError("hpcolls: [buf, count, type] needs an integer count (displacements are not supported)")
        if not isinstance(datatype, MPI.Datatype):
            raise InvalidBufferError("hpcolls: the last item of a buffer spec must be an MPI datatype")
    arr = _resolve_array(buf)
    if arr is None:
        return None
    ptr, n, code, device, nbytes, dtype = arr
    if datatype is not None:
        code = dtypes.code_of_mpi(datatype)
        if code is None:
            raise InvalidBufferError(f"hpcolls: MPI datatype {datatype.Get_name()} is not supported for device buffers")
        size = dtypes.ITEMSIZE[code]
        if count is None:
            if nbytes % size:
                raise InvalidBufferError(f"hpcolls: buffer of {nbytes} bytes is not a whole number of {datatype.Get_name()}")
            count = nbytes // size
        elif count * size > nbytes:
            raise InvalidBufferError(f"hpcolls: count {count} of {datatype.Get_name()} exceeds the buffer's {nbytes} bytes")
        n, nbytes = int(count), int(count) * size
    elif code is None:
        raise InvalidBufferError(f"hpcolls: element type {dtype} is not supported "
                                 f"(supported: {', '.join(dtypes.NAMES)})")
    return DeviceBuffer(ptr, n, code, device, nbytes)
