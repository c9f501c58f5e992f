"""The `stream=` argument of hpcolls calls, as a cudaStream_t integer."""
try:
    import cupy as _cupy
    _current_stream = _cupy.cuda.get_current_stream
except ImportError:
    _current_stream = None


def stream_ptr(stream):
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
