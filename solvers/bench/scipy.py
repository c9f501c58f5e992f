"""solvers.eigh beside scipy.linalg.eigh on CPUs: python -m solvers.bench --cpu-vs-scipy
[--n 64 256 1000 2000] [--method auto distributed single] (alone, or under mpiexec -n P).

Per n, one random pencil (A symmetric / Hermitian, B positive definite with condition 100;
``--standard`` for b=None), the same on every rank. solvers.eigh is timed under the run's ranks
(every rank calls it, as an SPMD code does) by each ``--method``; scipy.linalg.eigh on the same
arrays in the same run, by rank 0 alone with every core of its node while the other ranks wait
idle (a single-process scipy run, as a user would make it). The calls alternate (scipy, then
each method, ``--warmup`` untimed rounds then ``--repeat`` timed ones), so that a machine whose
load changes meanwhile weighs on all alike; each timing is the median of its ``--repeat``
samples. Eigenvalues are compared with scipy's. Rows
print as a table and, with --json, are written out; docs/PERFORMANCE.md holds the measurements.
"""
import argparse
import json
import statistics
import sys
import time

import numpy as np
import scipy.linalg

import solvers

from ..backend.threads import node_cores_lent, policy_for
from ..problems import spd_with_condition


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench --cpu-vs-scipy", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[64, 256, 1000, 2000])
    p.add_argument("--dtype", choices=("float64", "float32", "complex64", "complex128"), default="float64")
    p.add_argument("--method", nargs="+", choices=("auto", "distributed", "single", "replicated"), default=["auto"])
    p.add_argument("--standard", action="store_true", help="b=None (default: the generalized problem)")
    p.add_argument("--jobz", choices=("N", "V"), default="V")
    p.add_argument("--nb", type=int, default=None, help="block size of the distributed method")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json", metavar="PATH")
    return p.parse_args(argv)


def _idle_barrier(comm):
    """A barrier the waiting ranks sit in asleep, so that rank 0's scipy has the node's cores."""
    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(1e-4)


def _timed(call, comm):
    """(seconds, result) of one collective call: the slowest rank's time, after a barrier."""
    comm.Barrier()
    start = time.perf_counter()
    result = call()
    from mpi4py import MPI   # here: its import initializes MPI, which --help must not (solvers/__init__.py)
    return comm.allreduce(time.perf_counter() - start, op=MPI.MAX), result


def _scipy_on_root(call, comm, policy):
    """(seconds on rank 0, result there) of a single-process call, the other ranks idle."""
    comm.Barrier()
    seconds = result = None
    if comm.rank == 0:
        from mpi4py import MPI   # here: its import initializes MPI, which --help must not (solvers/__init__.py)
        with node_cores_lent(policy):
            seconds, result = _timed(call, MPI.COMM_SELF)
    _idle_barrier(comm)
    return comm.bcast(seconds), result


def _pencil(n, dtype, seed, standard):
    rng = np.random.default_rng([seed, n])
    x = rng.standard_normal((n, n))
    if dtype.kind == "c":
        x = x + 1j * rng.standard_normal((n, n))
    a = ((x + x.conj().T) / 2).astype(dtype)
    if standard:
        return a, None
    b = spd_with_condition(rng, n, 100.0)
    if dtype.kind == "c":   # a Hermitian positive definite B of the same spectrum: U B Uᴴ, U diagonal unitary
        phase = np.exp(1j * rng.uniform(0, 2 * np.pi, n))
        b = (phase[:, None] * b) * phase.conj()[None, :]
    return a, b.astype(dtype)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from mpi4py import MPI   # here: its import initializes MPI, which --help must not (solvers/__init__.py)
    comm = MPI.COMM_WORLD
    policy = policy_for(comm)
    dtype = np.dtype(args.dtype)
    say = (lambda s: print(s, flush=True)) if comm.rank == 0 else (lambda s: None)
    say(f"# solvers.eigh vs scipy.linalg.eigh: {comm.size} rank(s), {dtype.name}, "
        f"{'standard' if args.standard else 'generalized (itype 1)'}, jobz {args.jobz}, "
        f"median of {args.repeat} (warm-up {args.warmup}); BLAS threads {policy.line}; "
        f"scipy on rank 0 with {policy.cores} threads{'' if policy.threads is not None else ' (as the environment sets)'}")
    say(f"{'n':>6} {'method':>12} {'eigh s':>10} {'scipy s':>10} {'ratio':>6} {'max |dw|':>9}")
    rows = []
    for n in args.n:
        a, b = _pencil(n, dtype, args.seed, args.standard)
        only = args.jobz == "N"
        samples = {name: [] for name in ["scipy", *args.method]}
        for round_ in range(args.warmup + args.repeat):
            seconds, ref = _scipy_on_root(lambda: scipy.linalg.eigh(a, b, eigvals_only=only), comm, policy)
            results = {}
            for method in args.method:
                results[method] = _timed(lambda: solvers.eigh(a, b, eigvals_only=only, nb=args.nb,
                                                              method=method), comm)
            if round_ >= args.warmup:
                samples["scipy"].append(seconds)
                for method in args.method:
                    samples[method].append(results[method][0])
        w_ref = ref if only else (ref[0] if ref is not None else None)
        scipy_s = statistics.median(samples["scipy"])
        for method in args.method:
            got = results[method][1]
            w = got if only else got[0]
            eigh_s = statistics.median(samples[method])
            row = dict(n=n, ranks=comm.size, dtype=dtype.name, method=method, standard=args.standard,
                       jobz=args.jobz, eigh_median_s=eigh_s, eigh_samples_s=samples[method],
                       scipy_median_s=scipy_s, scipy_samples_s=samples["scipy"], ratio=eigh_s / scipy_s)
            if comm.rank == 0:
                row["max_eig_diff"] = float(np.abs(np.asarray(w, dtype=np.float64) - w_ref).max())
            rows.append(row)
            say(f"{n:>6} {method:>12} {eigh_s:>10.4f} {scipy_s:>10.4f} {row['ratio']:>6.2f} "
                f"{row.get('max_eig_diff', float('nan')):>9.1e}")
    if comm.rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "argv": sys.argv}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
