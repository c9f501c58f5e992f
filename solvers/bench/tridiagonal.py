"""The tridiagonal stage alone: python -m solvers.bench.tridiagonal [--n 2000 4000] (under mpiexec).

Per n, on the tridiagonal of Q Λ Qᵀ with Λ uniform in [−1, 1] and Q random orthogonal (the
bench's spectrum; made on rank 0 by LAPACK's dsytrd, O(n³) on its host: meant for n of a few
thousand), tridiagonal.stevd (divide and conquer, jobz V, into a block-cyclic layout of --nb)
for all eigenpairs and for the lowest ⌈F·n⌉ of each --lowest F (its top merge forming only
those eigenvectors), with --mrrr bisection + MRRR of those (stebz + stemr), with --invit
multisection + inverse iteration of those (stein.py: on the device in a GPU run; its stages'
times printed apart, and divide and conquer's if its check handed over), and with --sterf the
eigenvalues alone by host dsterf (jobz N's crossover to the device solve), with --multisection
every eigenvalue alone by the kernels' multisection (on the device in a GPU run). The solves
alternate within each round; every solve starts and ends at a barrier; rank 0 prints the median
and the samples of each, the load average, and each subset's time as a share of all's.
"""
import argparse
import math
import os
import statistics
import sys
import time

import numpy as np
import scipy.linalg

from ..backend import Collectives
from ..backend.arrays import synchronize
from ..backend.device import rank_backend
from ..distributed import DistMatrix, ProcessGrid
from ..stebz import stebz
from ..stein import multisection
from ..stemr import stemr
from ..plan import TRIDIAGONAL, resolve
from ..stevd import stevd
from ..stevr import stevr
from ..subset import EigenRange


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench.tridiagonal", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[2000, 4000], help="orders (default 2000 4000)")
    p.add_argument("--lowest", type=float, nargs="+", default=[0.1], metavar="F",
                   help="subsets: the lowest ceil(F*n) eigenpairs (default 0.1)")
    p.add_argument("--nb", type=int, default=32, help="block size of the eigenvector layout (default 32)")
    p.add_argument("--tridiagonal", choices=TRIDIAGONAL, default="auto",
                   help="how divide and conquer makes the eigenvectors over the ranks (default auto)")
    p.add_argument("--mrrr", action="store_true", help="also bisection + MRRR of each subset")
    p.add_argument("--invit", action="store_true",
                   help="also multisection + inverse iteration of each subset (stein.py)")
    p.add_argument("--sterf", action="store_true",
                   help="also eigenvalues alone by host LAPACK dsterf, what jobz N takes below "
                        "plan.DEVICE_EIGENVALUES_FROM in a GPU run")
    p.add_argument("--multisection", action="store_true",
                   help="also every eigenvalue alone by the kernels' multisection (stein.py: a warp "
                        "per eigenvalue in a GPU run; here one rank finds them all), what jobz N "
                        "takes from plan.DEVICE_EIGENVALUES_FROM in a GPU run")
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    p.add_argument("--repeat", type=int, default=3, help="timed rounds (default 3)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first (default 1)")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args(argv)


def spectrum_tridiagonal(n, seed):
    """(d, e) of Q diag(uniform[−1, 1]) Qᵀ by LAPACK's dsytrd (host)."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    a = (q * rng.uniform(-1, 1, n)) @ q.T
    a = (a + a.T) / 2
    lwork = int(scipy.linalg.lapack.get_lapack_funcs("sytrd_lwork", (a,))(n)[0])
    _, d, e, _, info = scipy.linalg.lapack.get_lapack_funcs("sytrd", (a,))(a, lower=1, lwork=lwork)
    if info:
        raise RuntimeError(f"dsytrd info = {info}")
    return d, e


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    from mpi4py import MPI   # here: its import initializes MPI, which --help must not (solvers/__init__.py)
    comm = MPI.COMM_WORLD
    device, xp = rank_backend(comm, args.device)
    grid = ProcessGrid(comm)
    say = (lambda s: print(s, flush=True)) if comm.rank == 0 else (lambda s: None)
    say(f"# solvers.bench.tridiagonal: {comm.size} rank(s), device {device}, tridiagonal "
        f"{args.tridiagonal}, nb {args.nb}, repeat {args.repeat} (warm-up {args.warmup})")
    for n in args.n:
        d, e = comm.bcast(spectrum_tridiagonal(n, args.seed) if comm.rank == 0 else None)
        plan = resolve(xp, n, grid.size, nb=args.nb, tridiagonal=args.tridiagonal)

        def divide_and_conquer(k):
            coll = Collectives(grid, "mpi", xp)
            layout = DistMatrix.empty(n, k, args.nb, grid, np.float64, xp=xp)
            with coll.stage("stedc"):
                stevd(xp.array(d), xp.array(e), coll, layout, None if k == n else (1, k), plan)

        def mrrr(k):
            coll = Collectives(grid, "mpi", xp)
            with coll.stage("stebz"):
                w = stebz(d, e, 1, k, coll)
            with coll.stage("stemr"):
                stemr(d, e, 1, w, args.nb, grid, coll, np.float64, xp)

        stages = {}

        def invit(k):
            coll = Collectives(grid, "mpi", xp)
            layout = DistMatrix.empty(n, k, args.nb, grid, np.float64, xp=xp)
            stevr(xp.array(d), xp.array(e), EigenRange.by_index(1, k, "invit"), layout, coll, True, plan=plan)
            stages[k] = {name: st.wall_s for name, st in coll.stats.items()}
            notes = coll.stats["stein"].notes
            stages[k].update({name: value for name, value in notes.items() if name.endswith("_s")})
            stages[k]["check"] = notes.get("stein_checks", "")
            stages[k]["handed over"] = notes.get("solver", "")

        solves = {"all": lambda: divide_and_conquer(n)}
        if args.multisection:
            solves["multisection"] = lambda: multisection(xp)(d, e, 1, n)
        if args.sterf:
            solves["sterf (host)"] = lambda: scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True,
                                                                           lapack_driver="sterf")
        for fraction in args.lowest:
            k = max(1, math.ceil(fraction * n - 1e-9))
            solves[f"D&C I:1:{k}"] = lambda k=k: divide_and_conquer(k)
            if args.mrrr:
                solves[f"MRRR I:1:{k}"] = lambda k=k: mrrr(k)
            if args.invit:
                solves[f"invit I:1:{k}"] = lambda k=k: invit(k)
        samples, loads = {name: [] for name in solves}, []
        for rnd in range(args.warmup + args.repeat):
            for name, solve in solves.items():
                comm.Barrier()
                start = time.perf_counter()
                solve()
                synchronize(xp)
                comm.Barrier()
                if rnd >= args.warmup:
                    samples[name].append(time.perf_counter() - start)
            loads.append(os.getloadavg()[0])
        whole = statistics.median(samples["all"])
        say(f"n={n} P={comm.size} (load average {min(loads):.1f}-{max(loads):.1f}): " + "; ".join(
            f"{name} {statistics.median(s):.3f} s [{' '.join(f'{x:.3f}' for x in s)}]"
            + ("" if name == "all" else f" ({statistics.median(s) / whole:.2f} × all)")
            for name, s in samples.items()))
        for k, times in stages.items():   # the last round's
            say(f"  invit I:1:{k}, last round: " + ", ".join(
                f"{name} {value:.4f} s" if isinstance(value, float) else f"{name}: {value}"
                for name, value in times.items() if value != ""))
    grid.free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
