"""The one parser of buffer arguments (the role of mpi4py's msgbuffer.pxi, for what hpcolls needs
to know before it picks a route): where a buffer spec's memory is, and its count and datatype.

A spec is what mpi4py takes: an array, or a list/tuple whose first item is the array and whose
other items are counts, displacements and datatypes (`[buf, MPI.DOUBLE]`, `[buf, count,
MPI.DOUBLE]`, `[buf, counts, displs, MPI.DOUBLE]`, ...). The array is in device memory when it
is a cupy array, a CUDA torch tensor, a DLPack object on a CUDA device, or a
`__cuda_array_interface__` object whose pointer CUDA reports as device (or managed) memory. Any
other array is host memory and goes to mpi4py unchanged: numpy, array.array, DLPack on the CPU,
and `__cuda_array_interface__` over host memory (mpi4py's own test arrays), whose pointer is
looked at only where a CUDA driver is installed, so a machine without one makes no CUDA call.
"""
import array
import ctypes
import functools
from collections import namedtuple

import numpy as np
from mpi4py import MPI

from . import dtypes, native_module
from .errors import InvalidBufferError

# A device array, whole: `dtype` is numpy's, or None where numpy has no such type (bfloat16).
DeviceArray = namedtuple("DeviceArray", "ptr nbytes dtype device")
# A spec the native kernels can take: `count` elements of native type `code` (None: not one the
# native layer has).
DeviceBuffer = namedtuple("DeviceBuffer", "ptr count code device nbytes")

try:  # cupy is optional; its ndarray is the common device array
    import cupy as _cupy
    _CUPY_NDARRAY = _cupy.ndarray
except ImportError:
    _cupy = None
    _CUPY_NDARRAY = None

# The exact types whose instances device_array reads as host memory from their type alone (no
# CUDA call, no attribute read), and the arguments that are no memory at all: where every buffer
# argument of a call is one of these (or a list/tuple spec whose array is), the call goes to
# mpi4py as it is made, straight from the buffer method's C entry (hpcolls/routes/host.py).
# Subclasses are not among them: one may carry __cuda_array_interface__.
HOST_TYPES = (np.ndarray, bytes, bytearray, memoryview, array.array)
NO_MEMORY = (None, MPI.IN_PLACE, MPI.BOTTOM)

_PREDEFINED = getattr(MPI, "_typedict", {})
_MPI_BUFFER = getattr(MPI, "buffer", None) or MPI.memory  # mpi4py 4 names it buffer; 3.x memory
_KDL_CPU, _KDL_CUDA, _KDL_CUDA_HOST, _KDL_CUDA_MANAGED = 1, 2, 3, 13


@functools.lru_cache(maxsize=1)
def cuda_driver_installed():
    """Whether the CUDA driver library can be loaded (loading it is no CUDA call). Without it no
    pointer can be device memory."""
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def _pointer_is_device(ptr):
    """(is device or managed memory, device ordinal) for a pointer behind __cuda_array_interface__."""
    if not ptr or not cuda_driver_installed():
        return False, -1
    try:
        native = native_module.load()
    except native_module.NativeModuleMissing:
        raise InvalidBufferError("hpcolls: cannot tell whether a __cuda_array_interface__ pointer is device "
                                 "memory: hpcolls._native is not built") from None
    return native.pointer_device(ptr)


def array_of(spec):
    """The array of a buffer spec: the spec itself, or the first item of a list/tuple spec."""
    return spec[0] if isinstance(spec, (list, tuple)) and spec else spec


def _c_strides(shape, itemsize):
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


def _cupy_array(a):
    if not a.flags.c_contiguous:
        raise InvalidBufferError("hpcolls: buffer is not C-contiguous; pass a contiguous array (e.g. cupy.ascontiguousarray)")
    return DeviceArray(a.data.ptr, a.nbytes, a.dtype, a.data.device_id)


def _torch_array(t):
    if not t.is_contiguous():
        raise InvalidBufferError("hpcolls: tensor is not contiguous; call .contiguous() first")
    name = str(t.dtype).replace("torch.", "")
    try:
        dtype = np.dtype(name)
    except TypeError:
        dtype = None  # bfloat16
    return DeviceArray(t.data_ptr(), t.numel() * t.element_size(), dtype, t.device.index)


def _cai_array(obj, cai):
    is_device, device = _pointer_is_device(cai["data"][0])
    if not is_device:
        return None
    dtype = np.dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    strides = cai.get("strides")
    if strides is not None and count > 1 and tuple(strides) != _c_strides(shape, dtype.itemsize):
        raise InvalidBufferError("hpcolls: buffer is not C-contiguous (__cuda_array_interface__ strides)")
    return DeviceArray(cai["data"][0], count * dtype.itemsize, dtype, device)


def device_array(spec):
    """DeviceArray of a spec's array when it is in device memory, None when it is in host memory
    (or the spec holds no array: None, MPI.IN_PLACE, MPI.BOTTOM)."""
    obj = array_of(spec)
    kind = type(obj)
    if kind is np.ndarray or obj is None or obj is MPI.IN_PLACE:
        return None
    if kind is _CUPY_NDARRAY:
        return _cupy_array(obj)
    if kind.__module__.startswith("torch"):
        return _torch_array(obj) if getattr(obj, "is_cuda", False) else None  # before CAI: torch's refuses bfloat16
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        return _cai_array(obj, cai)
    dl_device = getattr(obj, "__dlpack_device__", None)
    if dl_device is not None and dl_device()[0] in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        if _cupy is None:
            raise InvalidBufferError("hpcolls: a DLPack buffer on a CUDA device needs cupy to be read")
        return _cupy_array(_cupy.from_dlpack(obj))
    return None


def native_buffer(spec, arr, blocks=1):
    """DeviceBuffer for `spec`, whose array `arr` (device_array) is in device memory, as the
    native kernels read it, or None when the spec is not one they take (displacements, vector
    counts, a datatype the native layer does not carry: those go to MPI, which interprets them).

    `[buf, MPI.TYPE]` and `[buf, count, MPI.TYPE]` override the array's own element type the way
    mpi4py does: the count is then taken from the byte size (or given) in units of TYPE. With
    `blocks` > 1 (a buffer holding a block per rank: Allgather's receive buffer, an in-place
    Reduce_scatter_block's) the count is per block, as mpi4py reads it: a given count is one
    block's, an inferred one the whole buffer's divided by `blocks` (None where it does not
    divide: mpi4py says what is wrong)."""
    if not isinstance(spec, (list, tuple)):
        code = dtypes.code_of_numpy(arr.dtype) if arr.dtype is not None else dtypes.BF16
        if code is None:
            return None
        return _per_block(arr, None, code, dtypes.ITEMSIZE[code], blocks)
    if not 2 <= len(spec) <= 3 or not isinstance(spec[-1], MPI.Datatype):
        return None
    count = spec[1] if len(spec) == 3 else None
    if count is not None and not isinstance(count, (int, np.integer)):
        return None
    code = dtypes.code_of_mpi(spec[-1])
    if code is None:
        return None
    return _per_block(arr, count, code, dtypes.ITEMSIZE[code], blocks, spec[-1])


def byte_buffer(spec, arr, blocks=1):
    """DeviceBuffer of the bytes a data-moving collective (Bcast, Allgather) moves for `spec`, whose
    array `arr` is in device memory: `count` and `nbytes` are bytes (per block, as native_buffer
    reads `blocks`), code U8; any element type the array or a predefined contiguous MPI datatype
    names, since only the bytes move. None for what MPI must interpret: a derived datatype (MPI
    decides its layout), a predefined one with gaps (MPI.DOUBLE_INT), displacements, vector counts."""
    if not isinstance(spec, (list, tuple)):  # blocks of whole elements, as mpi4py counts them
        return _per_block(arr, None, dtypes.U8, arr.dtype.itemsize if arr.dtype is not None else 2, blocks)
    if not 2 <= len(spec) <= 3 or not isinstance(spec[-1], MPI.Datatype):
        return None
    count, datatype = (spec[1] if len(spec) == 3 else None), spec[-1]
    if count is not None and not isinstance(count, (int, np.integer)):
        return None
    if not datatype.is_predefined or datatype.Get_extent() != (0, datatype.Get_size()):
        return None
    return _per_block(arr, count, dtypes.U8, datatype.Get_size(), blocks, datatype)


def _per_block(arr, count, code, size, blocks, datatype=None):
    """DeviceBuffer of `count` units of `size` bytes per block (None: inferred from the array's
    bytes, None where they do not divide into `blocks` blocks of whole units), of native `code`."""
    if count is None:
        units, rest = divmod(arr.nbytes, size)
        if rest and datatype is not None:
            raise InvalidBufferError(f"hpcolls: buffer of {arr.nbytes} bytes is not a whole number of {datatype.Get_name()}")
        if rest or units % blocks:
            return None
        count = units // blocks
    elif count * size * blocks > arr.nbytes:
        what = datatype.Get_name() if datatype is not None else "bytes"
        raise InvalidBufferError(f"hpcolls: count {count} of {what}{' per rank' if blocks > 1 else ''} exceeds the "
                                 f"buffer's {arr.nbytes} bytes")
    count = int(count)
    return DeviceBuffer(arr.ptr, count * size // dtypes.ITEMSIZE[code], code, arr.device, count * size)


def _host_layout(obj):
    """(nbytes, numpy dtype or None) of a host array as mpi4py reads it, or None when mpi4py
    cannot read it either."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes, obj.dtype
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is not None:
        dtype = np.dtype(cai["typestr"])
        return int(np.prod(cai["shape"], dtype=np.int64)) * dtype.itemsize, dtype
    try:
        view = memoryview(obj)
        return view.nbytes, np.dtype(view.format)
    except (TypeError, ValueError):
        pass
    try:  # DLPack and the rest: mpi4py's own reading of the memory, in bytes
        nbytes = _MPI_BUFFER(obj).nbytes
    except Exception:  # noqa: BLE001 - whatever mpi4py refuses, it refuses in the call too
        return None
    try:
        dtype = np.dtype(str(getattr(obj, "dtype", "")).replace("torch.", "")) if hasattr(obj, "dtype") else None
    except TypeError:
        dtype = None
    return nbytes, dtype


def signature(spec):
    """(count, datatype name) of a spec as MPI would read it, for checking that ranks agree:
    count None for a spec of vector counts; ("?", kind) where the spec is not one this reads."""
    if spec is None or spec is MPI.IN_PLACE:
        return None
    obj = array_of(spec)
    arr = device_array(spec)
    if arr is not None:
        layout = (arr.nbytes, arr.dtype)
    else:
        layout = _host_layout(obj)
    explicit = spec[-1] if isinstance(spec, (list, tuple)) and isinstance(spec[-1], MPI.Datatype) else None
    items = len(spec) if isinstance(spec, (list, tuple)) else 1
    if items > 3 or (items == 3 and not isinstance(spec[1], (int, np.integer))):
        return None, explicit.Get_name() if explicit is not None else "?"
    if explicit is not None:
        datatype = explicit
    elif layout is not None and layout[1] is not None:
        datatype = _PREDEFINED.get(layout[1].char)  # mpi4py's own table of typechars
        if datatype is None:
            return "?", str(layout[1])
    elif layout is not None:
        return layout[0], "bytes"  # a type only mpi4py reads (DLPack without a dtype): compared in bytes
    else:
        return "?", type(obj).__name__
    if items == 3:
        return int(spec[1]), datatype.Get_name()
    if layout is None:
        return "?", datatype.Get_name()
    size = datatype.Get_size()
    return (layout[0] // size if size else 0), datatype.Get_name()
