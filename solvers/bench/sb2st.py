"""sb2st's GPU chase against itself at several block sizes: python -m solvers.bench.sb2st
[--n 8192 16384] [--threads 128 256 512].

The chase is latency-bound: each sweep starts two steps after the one before, so a chase takes
about 2 n steps' time whatever the GPU's width, and the time of one step (its loads of the band
into shared memory, its reductions and barriers) is what a block size can change. Per n and
--threads, on one random band of bandwidth --band (the same bits for every row), the chase alone
(sb2st with the reflectors kept, as a solve with eigenvectors runs it) is timed --repeat times
after a warm-up; printed: the median, its samples, µs per step (median / 2n) and the ratio to the
first --threads row (sb2st_native.THREADS_PER_BLOCK is the solver's), and the largest difference
of d and e from that row's (the block's sums are taken in another order, so not bitwise).
"""
import argparse
import statistics
import sys
import time

import numpy as np

from ..backend.arrays import synchronize
from ..sb2st import sb2st
from ..problems import random_band
from .one_gpu import one_gpu


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench.sb2st", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[8192, 16384], help="orders (default 8192 16384)")
    p.add_argument("--band", type=int, default=64, help="bandwidth (default 64, the GPU default)")
    p.add_argument("--threads", type=int, nargs="+", default=[128, 256, 512],
                   help="threads per block, whole warps (default 128 256 512; the first is the reference row)")
    p.add_argument("--dtype", choices=("float64", "complex128", "float32", "complex64"), default="float64")
    p.add_argument("--repeat", type=int, default=3, help="timed chases per row (default 3)")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cupy, coll, gpu = one_gpu("solvers.bench.sb2st", "the GPU chase")
    print(f"# solvers.bench.sb2st: {args.dtype}, band {args.band}, median of {args.repeat} chases "
          f"after a warm-up, reflectors kept; {gpu}")
    print("| n | threads | median s | samples | µs per step (median / 2n) | × first | max rel. diff of d, e |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in args.n:
        ab = cupy.asarray(random_band(np.random.default_rng(args.seed), n, args.band, args.dtype))
        first = None
        for threads in args.threads:
            samples = []
            for rnd in range(args.repeat + 1):
                synchronize(cupy)
                start = time.perf_counter()
                d, e, _ = sb2st(ab, args.band, coll, True, chase_threads=threads)
                synchronize(cupy)
                if rnd:
                    samples.append(time.perf_counter() - start)
            median = statistics.median(samples)
            got = np.concatenate([cupy.asnumpy(d), cupy.asnumpy(e)])
            if first is None:
                first = (median, got)
            diff = np.abs(got - first[1]).max() / max(np.abs(first[1]).max(), 1e-300)
            print(f"| {n} | {threads} | {median:.3f} | {' '.join(f'{x:.3f}' for x in samples)} | "
                  f"{1e6 * median / (2 * n):.1f} | {median / first[0]:.2f} | {diff:.1e} |", flush=True)
    coll.grid.free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
