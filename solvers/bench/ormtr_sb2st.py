"""Q2's back-transformation (ormtr_sb2st) by its fused slot kernel against its batched GEMMs:
python -m solvers.bench.ormtr_sb2st [--n 8192 16384] [--columns 1.0 0.1] [--dtype float64].

Per n, one GPU chase of a random band (bandwidth 64) gives the reflectors; per fraction of
--columns, Q2 Y for a random n × k Y (k = fraction · n, the columns a solve with a subset
transforms) is timed --repeat times after a warm-up, each method in turn in the same process.
Printed: the medians, the ratio kernel / GEMMs, the rate in the GEMM form's flops (4 n² k real
operations for float64, 16 n² k for complex128, the parallelograms' zero triangles included:
twice the reflectors' own 2 n² k) and the largest difference between the two results relative to
max |Y|.
"""
import argparse
import statistics
import sys
import time

import numpy as np

from ..backend.arrays import synchronize
from ..ormtr_sb2st import ormtr_sb2st
from ..sb2st import sb2st
from ..problems import random_band
from .one_gpu import one_gpu


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench.ormtr_sb2st", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[8192, 16384], help="orders (default 8192 16384)")
    p.add_argument("--columns", type=float, nargs="+", default=[1.0, 0.1],
                   help="fractions of n transformed (default 1.0 0.1)")
    p.add_argument("--dtype", choices=("float64", "complex128"), default="float64")
    p.add_argument("--repeat", type=int, default=5, help="timed calls per method and row (default 5)")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cupy, coll, gpu = one_gpu("solvers.bench.ormtr_sb2st", "Q2's back-transformation")
    band = 64
    print(f"# solvers.bench.ormtr_sb2st: {args.dtype}, band = group = {band}, median of {args.repeat} "
          f"calls after a warm-up; {gpu}")
    print("| n | columns | kernel s | GEMMs s | kernel / GEMMs | kernel TFLOP/s | GEMMs TFLOP/s | max diff / max abs Y |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    rng = np.random.default_rng(args.seed)
    flops_per = 16 if args.dtype == "complex128" else 4
    for n in args.n:
        ab = cupy.asarray(random_band(rng, n, band, args.dtype))
        _, _, reflectors = sb2st(ab, band, coll, True)
        del ab
        for fraction in args.columns:
            k = max(1, int(round(fraction * n)))
            y = _random(cupy, rng, n, k, args.dtype)
            medians, results = {}, {}
            for method in ("kernel", "gemm"):
                samples = []
                for rnd in range(args.repeat + 1):
                    synchronize(cupy)
                    start = time.perf_counter()
                    out = ormtr_sb2st(reflectors, y, method=method)
                    synchronize(cupy)
                    if rnd:
                        samples.append(time.perf_counter() - start)
                medians[method] = statistics.median(samples)
                results[method] = out
                del out
            diff = float(cupy.abs(results["kernel"] - results["gemm"]).max() / cupy.abs(y).max())
            flops = flops_per * n * n * k
            print(f"| {n} | {k} | {medians['kernel']:.4f} | {medians['gemm']:.4f} | "
                  f"{medians['kernel'] / medians['gemm']:.2f} | {flops / medians['kernel'] / 1e12:.1f} | "
                  f"{flops / medians['gemm'] / 1e12:.1f} | {diff:.1e} |", flush=True)
            del results, y
        del reflectors
        cupy.get_default_memory_pool().free_all_blocks()
    coll.grid.free()
    return 0


def _random(cupy, rng, n, k, dtype):
    """A random n × k array of ``dtype`` on the device (generated there: host generation of a
    16384² array would take longer than what is timed)."""
    gen = cupy.random.default_rng(int(rng.integers(1 << 31)))
    x = gen.standard_normal((n, k))
    if dtype == "complex128":
        x = x + 1j * gen.standard_normal((n, k))
    return x.astype(dtype)


if __name__ == "__main__":
    sys.exit(main())
