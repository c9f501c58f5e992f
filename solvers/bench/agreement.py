"""What the ranks' agreement costs a solve: [mpiexec -n P] python -m solvers.bench.agreement
[--n 2048 4096] [--device cpu|gpu] [--method auto|distributed|single].

For each order n, on one random pencil held by every rank: the agreement solvers.eigh makes
before any other message (agreement.py: the fingerprints of a's and b's sampled entries and the
one allgather), timed alone (median of --reps), and the whole solvers.eigh call (median of
--solves, after one untimed solve, eigenvalues only: the cheapest solve, so the largest share);
the agreement's share of the solve is what its budget (under 1 % from n = 2048) is about.
"""
import argparse
import statistics
import sys
import time

import numpy as np

from ..agreement import Agreement, fingerprint
from ..backend.arrays import to_host
from ..backend.device import rank_backend
from ..eigh import eigh
from ..problems import random_symmetric, spd_with_condition


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench.agreement", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[2048, 4096], help="orders (default 2048 4096)")
    p.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto")
    p.add_argument("--method", default="auto", help="solvers.eigh's method (default auto)")
    p.add_argument("--dtype", choices=("float64", "complex128"), default="float64")
    p.add_argument("--reps", type=int, default=50, help="timed agreements (default 50)")
    p.add_argument("--solves", type=int, default=3, help="timed solves (default 3)")
    return p.parse_args(argv)


def _agree(comm, xp, a, b):
    """The agreement as solvers.eigh makes it (its other entries are a few scalars)."""
    with Agreement(comm, "bench") as call:
        call.record(shape=a.shape, dtype=a.dtype.name, **{"entries of a": fingerprint(xp, a, True),
                                                          "entries of b": fingerprint(xp, b, True)})


def _median_seconds(comm, fn, reps):
    samples = []
    for _ in range(reps):
        comm.Barrier()
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from mpi4py import MPI   # here, not at the top: its import initializes MPI, which --help need not
    comm = MPI.COMM_WORLD
    device, xp = rank_backend(comm, args.device)
    dtype = np.dtype(args.dtype)
    say = print if comm.Get_rank() == 0 else (lambda *_: None)
    say(f"# solvers.bench.agreement: {comm.Get_size()} rank(s), {device}, {dtype.name}, "
        f"method {args.method}; agreement median of {args.reps}, solve median of {args.solves}")
    say("| n | agreement µs | solve s | share |")
    say("| --- | --- | --- | --- |")
    for n in args.n:
        rng = np.random.default_rng(n)       # the same pencil on every rank
        a = xp.asarray(random_symmetric(rng, n, dtype.kind == "c").astype(dtype))
        b = xp.asarray(spd_with_condition(rng, n, 10.0, dtype.kind == "c").astype(dtype))
        _agree(comm, xp, a, b)
        agreement = _median_seconds(comm, lambda: _agree(comm, xp, a, b), args.reps)
        solve = lambda: to_host(eigh(a, b, comm=comm, method=args.method, eigvals_only=True))
        solve()
        seconds = _median_seconds(comm, solve, args.solves)
        say(f"| {n} | {agreement * 1e6:.1f} | {seconds:.4f} | {100 * agreement / seconds:.3f} % |")


if __name__ == "__main__":
    main()
