"""sy2sb's dense → band reduction on one GPU, whole and by phase: python -m solvers.bench.sy2sb
[--n 8192 16384] [--chunk 1024 2048 4096] [--panel cholqr2 geqrf].

Per n, --chunk (columns per trailing-update GEMM) and --panel (the panels' factorization), on
one random symmetric matrix (the same for every row), sy2sb alone is timed --repeat times after
a warm-up (the solver's way: nothing synchronized inside it); printed: the median, its samples
and the TFLOP/s of 4n³/3 flops (× 4 complex). Then one more run with each panel's phases timed,
the device synchronized around each (sy2sb's ``timings``): the panel (gather, QR, broadcast),
the product (X = C V, W) and the trailing update, summed over the panels. Their sum over the
unsynchronized median says how much of the stage is waiting between phases rather than working
in them: near 1 the GPU is busy, well above 1 the launches of a phase (Python and cupy's work
per call) outlast its kernels.
"""
import argparse
import itertools
import statistics
import sys
import time

import numpy as np

from ..backend.arrays import synchronize
from ..distributed import DistMatrix
from ..plan import PANEL_METHODS, SY2SB_CHUNK
from ..sy2sb import sy2sb
from .one_gpu import one_gpu


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench.sy2sb", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[8192, 16384], help="orders (default 8192 16384)")
    p.add_argument("--band", type=int, default=64, help="bandwidth (default 64, the GPU default)")
    p.add_argument("--nb", type=int, default=256, help="block size (default 256, the solver's on GPUs)")
    p.add_argument("--chunk", type=int, nargs="+", default=[SY2SB_CHUNK["gpu"]],
                   help=f"columns per trailing-update GEMM (default {SY2SB_CHUNK['gpu']}, plan.SY2SB_CHUNK's)")
    p.add_argument("--panel", nargs="+", choices=PANEL_METHODS, default=["auto"],
                   help="panel factorizations to compare (default auto, plan.AUTO_PANEL's; "
                        "cholqr2: CholeskyQR2 where it can be trusted, else geqrf; geqrf: every panel)")
    p.add_argument("--dtype", choices=("float64", "complex128"), default="float64")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per row (default 3)")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cupy, coll, gpu = one_gpu("solvers.bench.sy2sb", "the GPU reduction")
    grid = coll.grid
    print(f"# solvers.bench.sy2sb: {args.dtype}, band {args.band}, nb {args.nb}, median of {args.repeat} "
          f"after a warm-up; {gpu}")
    print("| n | chunk | panel QR | median s | TFLOP/s | samples | panel / product / update s (synchronized) | "
          "phases / median |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    flops_factor = 4 if args.dtype.startswith("complex") else 1
    for n in args.n:
        rng = np.random.default_rng(args.seed)
        a = rng.standard_normal((n, n))
        if flops_factor == 4:
            a = a + 1j * rng.standard_normal((n, n))
        a = cupy.asarray(a + a.conj().T)
        source = DistMatrix.from_global(a, grid, args.nb)
        del a
        for chunk, panel in itertools.product(args.chunk, args.panel):
            samples = []
            for rnd in range(args.repeat + 1):
                c = source.copy()
                synchronize(cupy)
                start = time.perf_counter()
                sy2sb(c, coll, args.band, chunk, panel=panel)
                synchronize(cupy)
                if rnd:
                    samples.append(time.perf_counter() - start)
            timings = {}
            sy2sb(source.copy(), coll, args.band, chunk, timings, panel=panel)
            median = statistics.median(samples)
            phases = [timings.get(name, 0.0) for name in ("panel", "product", "update")]
            tflops = flops_factor * 4 * n ** 3 / 3 / median / 1e12
            print(f"| {n} | {chunk} | {panel} | {median:.3f} | {tflops:.1f} | {' '.join(f'{x:.3f}' for x in samples)} | "
                  f"{' / '.join(f'{x:.3f}' for x in phases)} | {sum(phases) / median:.2f} |", flush=True)
    grid.free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
