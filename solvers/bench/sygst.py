"""sygst's one-rank ways for itype 1 on one GPU, in the same run: python -m solvers.bench.sygst
[--n 8192 16384] [--dtype float64 complex128] [--block 512 1024 2048].

Per n and dtype, on one random Hermitian A and the Cholesky factor L of a random Hermitian
positive definite B (the same for every row), sygst (solvers/sygst.py: "solves", the library solve
then the lower-triangle one; "blocked", LAPACK's blocked order, at each --block) is timed --repeat
times after a warm-up; printed: the median, its samples, and the largest difference of the
blocked way's lower triangle from the solves' (relative to its largest entry). Which way
plan.SYGST_ONE_RANK_ITYPE1 takes on GPUs rests on this.
"""
import argparse
import statistics
import sys
import time

import numpy as np

from .. import sygst as sygst_module
from ..backend.arrays import synchronize
from ..distributed import DistMatrix
from .one_gpu import one_gpu



def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench.sygst", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[8192, 16384], help="orders (default 8192 16384)")
    p.add_argument("--dtype", nargs="+", choices=("float64", "complex128"), default=["float64"])
    p.add_argument("--block", type=int, nargs="+", default=[sygst_module.BLOCKED_NB],
                   help=f"the blocked way's diagonal blocks (default {sygst_module.BLOCKED_NB})")
    p.add_argument("--nb", type=int, default=256, help="block size of the matrices (default 256)")
    p.add_argument("--repeat", type=int, default=3, help="timed runs per row (default 3)")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    cupy, coll, gpu = one_gpu("solvers.bench.sygst", "sygst's one-rank ways")
    grid = coll.grid
    print(f"# solvers.bench.sygst: itype 1, lower, nb {args.nb}, median of {args.repeat} after a warm-up; {gpu}")
    print("| n | dtype | way | block | median s | samples | max difference / max entry |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for n in args.n:
        for dtype in args.dtype:
            rng = np.random.default_rng(args.seed)
            complex_ = dtype.startswith("complex")

            def random(shape):
                x = rng.standard_normal(shape)
                return (x + 1j * rng.standard_normal(shape)).astype(dtype) if complex_ else x

            a = cupy.asarray(random((n, n)))
            a = a + a.conj().T
            g = cupy.asarray(random((n, n)))
            lfac = cupy.linalg.cholesky(g @ g.conj().T / n + cupy.eye(n, dtype=dtype))
            del g
            da = DistMatrix.from_global(a, grid, args.nb)
            dl = DistMatrix.from_global(lfac, grid, args.nb)
            del a, lfac
            reference = None
            for way, block in [("solves", None)] + [("blocked", b) for b in args.block]:
                if block is not None:
                    sygst_module.BLOCKED_NB = block
                samples = []
                for rnd in range(args.repeat + 1):
                    synchronize(cupy)
                    start = time.perf_counter()
                    c = sygst_module.sygst(da, True, dl, 1, coll, method=way)
                    synchronize(cupy)
                    if rnd:
                        samples.append(time.perf_counter() - start)
                lower = cupy.tril(c.local)
                del c
                if reference is None:
                    reference, diff = lower, "–"
                else:
                    diff = f"{float(cupy.abs(lower - reference).max() / cupy.abs(reference).max()):.1e}"
                print(f"| {n} | {dtype} | {way} | {block or '–'} | {statistics.median(samples):.3f} | "
                      f"{' '.join(f'{x:.3f}' for x in samples)} | {diff} |", flush=True)
    grid.free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
