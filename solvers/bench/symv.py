"""sytrd's one-rank local product against cuBLAS: python -m solvers.bench.symv [--m 8192 4096 ...].

For each order m: solvers._kernels.hemv_lower (reads the lower triangle, m²/2 elements; a symv
for real types) and cuBLAS gemv through cupy (``a @ x``, reads all m² elements) on the same
random symmetric (complex: Hermitian) matrix,
each timed with CUDA events over --calls back-to-back calls, median of --reps repetitions after a
warm-up. Reported: µs per call and the HBM bandwidth of the bytes each must read; a device-to-
device copy of the matrix in the same run gives the ceiling. Also checks symv against the gemv.
"""
import argparse
import statistics
import sys

import numpy as np

from ..kernels import kernels


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench.symv", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--m", type=int, nargs="+", default=[16384, 8192, 4096, 2048, 1024], help="orders")
    p.add_argument("--dtype", choices=("float64", "float32", "complex128", "complex64"), default="float64")
    p.add_argument("--calls", type=int, default=20, help="calls per timed repetition (default 20)")
    p.add_argument("--reps", type=int, default=15, help="timed repetitions (default 15)")
    return p.parse_args(argv)


def _median_us(cp, fn, calls, reps):
    fn()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    samples = []
    for _ in range(reps):
        start.record()
        for _ in range(calls):
            fn()
        stop.record()
        stop.synchronize()
        samples.append(1e3 * cp.cuda.get_elapsed_time(start, stop) / calls)
    return statistics.median(samples)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    import cupy as cp   # an optional dependency: this benchmark is a GPU run's only
    native, why = kernels()
    if native is None:
        raise SystemExit(f"solvers.bench.symv: {why}")
    dtype = np.dtype(args.dtype)
    code = native.DTYPES[dtype.name]
    stream = cp.cuda.get_current_stream().ptr
    device = cp.cuda.Device().id
    print(f"# solvers.bench.symv: {dtype.name}, {args.calls} calls x {args.reps} reps (median), "
          f"GB/s = bytes each must read / time")
    print("| m | hemv_lower µs | GB/s | cuBLAS gemv µs | GB/s | copy of A GB/s (read+write) | max rel diff |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for m in args.m:
        a = _random(cp, (m, m), dtype)
        a = a + a.conj().T
        x = _random(cp, m, dtype)
        y = cp.empty(m, dtype=dtype)
        work = cp.empty(native.hemv_lower_work_elems(m), dtype=dtype)
        out = cp.empty_like(a)

        def symv():
            native.hemv_lower(code, device, m, a.data.ptr, m, x.data.ptr, y.data.ptr, work.data.ptr, stream)

        symv_us = _median_us(cp, symv, args.calls, args.reps)
        gemv_us = _median_us(cp, lambda: a @ x, args.calls, args.reps)
        copy_us = _median_us(cp, lambda: cp.copyto(out, a), max(1, args.calls // 4), args.reps)
        symv()
        ref = a @ x
        diff = float(cp.abs(y - ref).max() / cp.abs(ref).max())
        full, half = m * m * dtype.itemsize, m * (m + 1) // 2 * dtype.itemsize
        print(f"| {m} | {symv_us:.1f} | {half / symv_us / 1e3:.0f} | {gemv_us:.1f} | {full / gemv_us / 1e3:.0f} "
              f"| {2 * full / copy_us / 1e3:.0f} | {diff:.1e} |")
        del a, out, work
    return 0


def _random(cp, shape, dtype):
    x = cp.random.standard_normal(shape)
    if dtype.kind == "c":
        x = x + 1j * cp.random.standard_normal(shape)
    return x.astype(dtype)


if __name__ == "__main__":
    sys.exit(main())
