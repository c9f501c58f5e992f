"""sygvd benchmark against cuSOLVER: python -m solvers.bench [--n 8192 16384] (under mpiexec/srun).

Per n it solves the embedded known-spectrum problem (float64, itype 1, jobz V unless told;
complex64 / complex128 give a Hermitian problem) with solvers.sygvd on the run's grid and
collectives, by each ``--method`` (default distributed: the stages; single: one cuSOLVER /
LAPACK call on rank 0), and beside it, on the same matrices: on a one-rank GPU run, in the same
process on the same GPU, cuSOLVER's single-GPU ``cusolverDn<t>sygvd`` (``<t>hegvd`` for
complex: chegvd, zhegvd); on a GPU run with every rank on its own GPU (one rank included),
cuSOLVERMp's distributed ``sygvd`` on the same grid and layout (bench/cusolvermp.py; needs
nvmath-python and the cuSOLVERMp library). The header says which peers run and, for each that
does not, why. Every solve is repeated; warm-up solves are excluded; medians are reported, with
the per-stage times of the median solve and its ratio to each peer. Eigenvalues are checked
against the exact ones.

``--sytrd-loop kernels fused`` times the one-stage reduction's native column loops (one launch per
step, or a panel's columns in one launch: solvers/plan.py's SYTRD_LOOPS) in a row each; the
sytrd stage's notes give its launches per column (launches_per_column) and which loop ran.
``--sytrd-phases`` also times each phase of the column step on the GPU (sytrd_phase_ms in the
notes: CUDA events around each launch of the kernel loop, block 0's clock in the fused loop),
which costs the timed solves a little.

``--reduction 1stage 2stage`` times each reduction to tridiagonal form (solvers/plan.py) in
its own row, beside the same peers; a two-stage row also gives the achieved TFLOP/s of sy2sb /
he2hb (4n³/3 real flops; 4 times that for complex data), and ``--band`` sets its bandwidth.

``--range I:IL:IU`` / ``V:VL:VU`` (1-based, as the CLI's) or ``--lowest F`` (the lowest
⌈F·n⌉ eigenpairs, e.g. 0.1) solve a subset, and the cuSOLVER peer is then ``<t>sygvdx`` /
``<t>hegvdx`` with the same range (cuSOLVERMp has no subsets and is skipped). Several ranges
(``--range A I:1:1638``) give a row each, and for each subset the share of the full solve's
tridiagonal solve and back-transformations that it saves (together, and each apart).
``--tridiagonal replicated`` has every rank solve the whole tridiagonal problem (what the
rows-by-rank divide and conquer replaced: for measuring the replica's cost). ``--factored``
adds, per n, the time of solves against B's factor computed once (potrf timed apart, then
``sygvd(..., b_factored=True)``): what an SCF loop reusing B pays per A.

``python -m solvers.bench --cpu-vs-scipy ...`` times solvers.eigh beside scipy.linalg.eigh
instead (bench/scipy.py; its own --help).

cuSOLVER is called through ctypes on the libcusolver that cupy loads (the library nvmath-python's
cusolverDn bindings call too), so no extra package is needed on the GPU machine.
"""
import argparse
import dataclasses
import json
import math
import statistics
import sys
import time

import resource

import numpy as np

from ..backend.arrays import synchronize, to_host
from ..backend.collectives import create_collectives
from ..backend.device import rank_backend
from ..backend.threads import policy_for
from ..cli.report import stage_table
from ..distributed.distmatrix import DistMatrix
from ..distributed.grid import ProcessGrid
from ..distributed.redistribute import lower_triangle
from ..lapack_names import lapack_name
from ..plan import SYTRD_LOOPS, TRIDIAGONAL, block_size, plan_for
from ..potrf import potrf
from ..problems import known_spectrum_problem
from ..subset import EigenRange, positions
from ..sygvd import sygvd
from .cusolver import CusolverSygvd
from .cusolvermp import CusolverMpSygvd
from .memory_peaks import StagePeaks
from .scipy import main as versus_scipy


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m solvers.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, nargs="+", default=[8192, 16384], help="orders (default 8192 16384)")
    p.add_argument("--nb", type=int, default=None, help="block size (default: the solver's)")
    p.add_argument("--dtype", choices=("float64", "float32", "complex64", "complex128"), default="float64")
    p.add_argument("--method", nargs="+", choices=("distributed", "single", "auto"), default=["distributed"],
                   help="how solvers.sygvd solves (solvers/plan.py); several: one row each "
                        "(default distributed)")
    p.add_argument("--reduction", nargs="+", choices=("auto", "1stage", "2stage"), default=["auto"],
                   help="reduction to tridiagonal form (solvers/plan.py); several: one row each "
                        "(default auto)")
    p.add_argument("--sytrd-loop", nargs="+", choices=SYTRD_LOOPS, default=["auto"],
                   help="the one-stage reduction's native column loop (solvers/plan.py); several: "
                        "one row each (default auto: the plan's choice)")
    p.add_argument("--sytrd-phases", action="store_true",
                   help="time each phase of the one-stage column step on the GPU (sytrd_phase_ms in "
                        "the sytrd stage's notes)")
    p.add_argument("--band", type=int, default=None,
                   help="two-stage bandwidth, a divisor of nb (default: solvers/plan.py's)")
    p.add_argument("--tridiagonal", choices=TRIDIAGONAL, default="auto",
                   help="how divide and conquer makes the tridiagonal's eigenvectors over P > 1 "
                        "ranks: rows (each rank its rows; auto) or replicated (every rank the "
                        "whole matrix, for measuring what the replica cost)")
    p.add_argument("--jobz", choices=("N", "V"), default="V")
    p.add_argument("--collectives", default="auto", choices=("auto", "hpcolls", "nccl", "mpi"))
    p.add_argument("--device", default="auto", choices=("auto", "cpu", "gpu"))
    p.add_argument("--repeat", type=int, default=3, help="timed solves per n (default 3)")
    p.add_argument("--warmup", type=int, default=1,
                   help="untimed solves first (default 1); every run also solves one problem of "
                        "order min(n, 1024) first in every configuration, so that even with 0 no "
                        "GPU kernel's first load is timed")
    p.add_argument("--no-cusolver", action="store_true", help="skip the cuSOLVER peer")
    p.add_argument("--no-cusolvermp", action="store_true", help="skip the cuSOLVERMp peer")
    p.add_argument("--range", type=_eigen_range, nargs="+", default=[], metavar="A|I:IL:IU|V:VL:VU",
                   help="the eigenpairs to compute (1-based indices, as python -m solvers.sygvd); "
                        "several: one row each, and each subset's saving against the A row")
    p.add_argument("--lowest", type=float, nargs="+", default=[], metavar="F",
                   help="the lowest ceil(F*n) eigenpairs (0 < F <= 1), rows after --range's")
    p.add_argument("--factored", action="store_true",
                   help="also time solves against B's factor computed once (b_factored=True)")
    p.add_argument("--memory", action="store_true",
                   help="after the timed solves, one more (untimed) with its allocations tracked: "
                        "each stage's peak and final live memory above the inputs, in n × n "
                        "matrices (solvers/bench/memory_peaks.py; device memory on GPUs, numpy's on CPUs)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    return p.parse_args(argv)


def _eigen_range(text):
    try:
        return EigenRange.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def subsets_for(args, n):
    """The EigenRanges of --range and --lowest for order n, in order (None: all; [None]
    without either)."""
    for fraction in args.lowest:
        if not 0 < fraction <= 1:
            raise SystemExit(f"--lowest must be in (0, 1], got {fraction}")
    chosen = [None if r.is_all else r for r in args.range]
    chosen += [EigenRange.by_index(1, max(1, math.ceil(f * n - 1e-9))) for f in args.lowest]
    return chosen or [None]


def _peer_routines(dtype, args, n_first):
    """cuSOLVER's routines for the rows asked: <t>sygvd for all eigenpairs, <t>sygvdx for a subset."""
    return " / ".join(dict.fromkeys(CusolverSygvd.routine(dtype, s) for s in subsets_for(args, n_first)))


def timed(fn, repeat, warmup, sync):
    """Median wall seconds of fn() over ``repeat`` calls after ``warmup`` calls, and the last
    result of the median call."""
    from mpi4py import MPI   # here: its import initializes MPI, which --help must not (solvers/__init__.py)
    samples, results = [], []
    for rep in range(warmup + repeat):
        result = None   # the last call's result goes before the next call allocates its own
        MPI.COMM_WORLD.Barrier()
        start = time.perf_counter()
        result = fn()
        sync()
        elapsed = time.perf_counter() - start
        if rep >= warmup:
            samples.append(elapsed)
            results.append(result)
    k = int(np.argsort(samples)[len(samples) // 2])
    return statistics.median(samples), samples, results[k]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if "--cpu-vs-scipy" in argv:
        return versus_scipy([arg for arg in argv if arg != "--cpu-vs-scipy"])
    args = parse_args(argv)
    from mpi4py import MPI   # here: its import initializes MPI, which --help must not (solvers/__init__.py)
    comm = MPI.COMM_WORLD
    blas_line = policy_for(comm).line   # as the CLI does: ranks on a node split its cores
    device, xp = rank_backend(comm, args.device)
    grid = ProcessGrid(comm, None)
    coll = create_collectives(grid, args.collectives, xp)
    dtype = np.dtype(args.dtype)
    say = (lambda s: print(s, flush=True)) if comm.rank == 0 else (lambda s: None)
    peer = None
    if device == "gpu" and comm.size == 1 and not args.no_cusolver:
        peer = CusolverSygvd(xp)
    subset_asked = any(r is not None for r in subsets_for(args, 1))
    if args.no_cusolvermp or dtype.kind == "c" or subset_asked:
        mp_peer, mp_why = None, "--no-cusolvermp" if args.no_cusolvermp else \
            "its sygvd has no subsets" if subset_asked else \
            f"{dtype.name}: bench/cusolvermp.py binds the real types only"
    else:
        mp_peer, mp_why = CusolverMpSygvd.create(grid, xp, device, args.jobz)
    say(f"# solvers.bench: {comm.size} rank(s), grid {grid.nprow}x{grid.npcol}, device {device}, "
        f"collectives {coll.kind} via {coll.transport}, {dtype.name}, jobz {args.jobz}, "
        f"method {' '.join(args.method)}, reduction {' '.join(args.reduction)}, "
        f"sytrd loop {' '.join(args.sytrd_loop)}, "
        f"tridiagonal {args.tridiagonal}, "
        f"repeat {args.repeat} (warm-up {args.warmup}); BLAS threads {blas_line}; peers: "
        f"{f'cuSOLVER {_peer_routines(dtype, args, n_first=args.n[0])}, same GPU' if peer else 'no cuSOLVER (it runs on one-rank GPU runs)'}; "
        f"{'cuSOLVERMp sygvd, same grid' if mp_peer else f'no cuSOLVERMp ({mp_why})'}")
    rows = []
    def problem(n):
        """(A, B as DistMatrix, A and B on rank 0 for the peer, the exact eigenvalues)."""
        nb = block_size(min(args.nb, n) if args.nb else None, n, device == "gpu")
        a_root = b_root = exact = None
        if comm.rank == 0:
            a_root, b_root, exact = known_spectrum_problem(n, 1, args.seed, xp, hermitian=dtype.kind == "c")
            a_root, b_root = a_root.astype(dtype), b_root.astype(dtype)
        a = DistMatrix.scatter(a_root, (n, n), dtype, grid, nb, coll, xp=xp)
        b = DistMatrix.scatter(b_root, (n, n), dtype, grid, nb, coll, xp=xp)
        if grid.size == 1:      # the local arrays are the whole matrices: one copy on the device
            a_root, b_root = a.local, b.local
        return a, b, a_root, b_root, exact

    _prime(args, coll, problem, peer)
    for n in args.n:
        a, b, a_root, b_root, exact = problem(n)
        if xp is not np:        # the pool then holds the inputs only: its marks are the solvers'
            xp.get_default_memory_pool().free_all_blocks()
        for subset in subsets_for(args, n):
            kept = None if exact is None else exact[positions(exact, subset)]
            peers = {}   # each peer is timed once per n and range, beside the first row
            for method, reduction, loop in _configurations(args):
                row = _time_ours(args, coll, a, b, method, kept, xp, subset, reduction, loop)
                ours_s = row["ours_median_s"]
                if args.factored:
                    row.update(_time_factored(args, coll, a, b, method, xp, subset, ours_s, reduction))
                if peer is not None:
                    if "cusolver" not in peers:
                        peers["cusolver"] = _time_peer(args, peer, a_root, b_root, kept, xp, subset)
                    row.update(peers["cusolver"])
                    if "cusolver_median_s" in row:
                        row["ratio"] = ours_s / row["cusolver_median_s"]
                if mp_peer is not None:
                    if "cusolvermp" not in peers:
                        peers["cusolvermp"] = _time_cusolvermp(args, mp_peer, a, b, kept, xp)
                    row.update(peers["cusolvermp"],
                               ratio_cusolvermp=ours_s / peers["cusolvermp"]["cusolvermp_median_s"])
                rows.append(row)
                _report(say, row)
        _report_savings(say, [row for row in rows if row["n"] == n])
    if comm.rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "argv": sys.argv}, f, indent=1)
    if peer is not None:
        peer.close()
    if mp_peer is not None:
        mp_peer.close()
    grid.free()
    return 0


PRIME_ORDER = 1024   # order of a run's untimed first solves (_prime)


def _configurations(args):
    """(method, reduction, sytrd loop) of every row asked, in the order they are timed."""
    return [(m, r, s) for m in args.method for r in args.reduction for s in args.sytrd_loop]


def _prime(args, coll, problem, peer):
    """One untimed solve of order min(n, PRIME_ORDER) in every configuration asked, ours and
    cuSOLVER's, before anything is timed: a process's first use of a GPU kernel loads (or
    compiles) it, seconds in all, which a --warmup 0 row at a large n would otherwise time."""
    smallest = min(args.n)
    n = min(smallest, PRIME_ORDER)
    a, b, a_root, b_root, _ = problem(n)
    for subset in (_index_range_at(r, n, smallest) for r in subsets_for(args, smallest)):
        for method, reduction, loop in _configurations(args):
            sygvd(a, b, coll, itype=1, jobz=args.jobz, uplo="L", subset=subset,
                  plan=_plan(args, a, method, reduction, sytrd_loop=loop))
        if peer is not None:
            peer.solve(a_root, b_root, args.jobz, subset)
    coll.reset()


def _plan(args, a, method, reduction, b_factored=False, sytrd_loop="auto"):
    """The plan of a row's solves on ``a`` (solvers/plan.py): every choice made once, for all of
    the row's repetitions."""
    plan = plan_for(a, method=method, reduction=reduction, band=args.band, tridiagonal=args.tridiagonal,
                    b_factored=b_factored, sytrd_loop=sytrd_loop)
    return dataclasses.replace(plan, sytrd_profile=True) if args.sytrd_phases else plan


def _index_range_at(subset, n, n_asked):
    """An index range asked for order n_asked as the same share of the spectrum at order n (the
    prime's solve takes the subset's path, whose kernels do not depend on its bounds, and
    I:1:1638 is no range of an order 1024); every other range as it is."""
    if subset is None or subset.kind != "I" or n == n_asked:
        return subset
    at = lambda i: min(n, max(1, math.ceil(i * n / n_asked)))  # noqa: E731
    return dataclasses.replace(subset, il=at(subset.il), iu=at(subset.iu))


def _time_ours(args, coll, a, b, method, exact, xp, subset=None, reduction="auto", sytrd_loop="auto"):
    """One row: solvers.sygvd by ``method``, ``reduction`` and ``sytrd_loop``, timed as ``timed``
    does, with its stage table."""
    comm = coll.grid.comm
    plan = _plan(args, a, method, reduction, sytrd_loop=sytrd_loop)

    def ours():
        coll.reset()
        w, _ = sygvd(a, b, coll, itype=1, jobz=args.jobz, uplo="L", subset=subset, plan=plan)
        stages = {k: v.wall_s for k, v in coll.stats.items()}
        return w, stages, stage_table(coll.stats, sum(stages.values()))

    med, samples, (w, stages, table) = timed(ours, args.repeat, args.warmup, lambda: synchronize(xp))
    memory = _memory_high_water(comm, xp)
    if args.memory:     # one more solve, untimed, its allocations tracked
        peaks = StagePeaks(xp)
        with peaks.track(coll):
            ours()
        memory["stage_peaks"] = (f"{'host' if xp is np else 'device'}: "
                                 + peaks.line(a.shape[0] ** 2 * np.dtype(a.dtype).itemsize, "n × n matrices"))
    row = dict(**memory, n=a.shape[0], nb=a.nb, ranks=comm.size, dtype=a.dtype.name, jobz=args.jobz,
               range=str(subset or "A"), eigenpairs=int(w.shape[0]),
               collectives=coll.kind, method=method, reduction=reduction, sytrd_loop=plan.sytrd_loop,
               tridiagonal=args.tridiagonal, ours_median_s=med,
               ours_samples_s=samples, sy2sb_tflops=_sy2sb_tflops(stages, a.shape[0], a.dtype),
               ours_stages_s=stages, ours_stage_table=table)
    if comm.rank == 0:
        row["ours_max_eig_err"] = _error(w, exact)
    return row


def _sy2sb_tflops(stages, n, dtype):
    """Achieved TFLOP/s of sy2sb / he2hb in this solve (None without that stage): 4n³/3 real
    flops, 4 times that for complex data (a complex multiply-add is four real ones)."""
    seconds = stages.get(lapack_name("sy2sb", dtype))
    if not seconds:
        return None
    return 4.0 * n ** 3 / 3 * (4 if np.dtype(dtype).kind == "c" else 1) / seconds / 1e12


def _memory_high_water(comm, xp):
    """The largest, over ranks, of this process's peak resident host memory and (GPU runs) of
    cupy's memory pool, which keeps every block it ever handed out: high-water marks of the
    whole process so far, so one configuration per process measures that configuration."""
    from mpi4py import MPI   # here: its import initializes MPI, which --help must not (solvers/__init__.py)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # KiB on Linux
    pool = 0 if xp is np else xp.get_default_memory_pool().total_bytes()
    return dict(max_rank_host_peak_bytes=comm.allreduce(rss, op=MPI.MAX),
                max_rank_device_pool_bytes=comm.allreduce(pool, op=MPI.MAX))


def _time_factored(args, coll, a, b, method, xp, subset, ours_s, reduction="auto"):
    """B's factor once (potrf, timed alone), then solves against it (b_factored=True)."""
    plan = _plan(args, a, "distributed" if method in ("auto", "single") else method, reduction, b_factored=True)

    def factor():
        return potrf(lower_triangle(b, True, coll), coll)

    potrf_s, _, lfac = timed(factor, args.repeat, args.warmup, lambda: synchronize(xp))
    med, samples, _ = timed(lambda: sygvd(a, lfac, coll, itype=1, jobz=args.jobz, uplo="L", subset=subset,
                                          b_factored=True, plan=plan),
                            args.repeat, args.warmup, lambda: synchronize(xp))
    return dict(potrf_s=potrf_s, factored_median_s=med, factored_samples_s=samples,
                factored_saving=1 - med / ours_s)


def _time_peer(args, peer, a_root, b_root, exact, xp, subset=None):
    """cuSOLVER's row; a failure of its call (the row of ours is kept) as cusolver_error."""
    try:
        # Its eigenvalues alone are kept: an n × n of eigenvectors per call held through the
        # next call did not fit beside cuSOLVER's workspace at n = 32768 on an 80 GB card.
        med, samples, w = timed(lambda: peer.solve(a_root, b_root, args.jobz, subset)[0],
                                args.repeat, args.warmup, lambda: synchronize(xp))
    except (RuntimeError, xp.cuda.memory.OutOfMemoryError) as exc:
        return dict(cusolver_error=f"{type(exc).__name__}: {exc}")
    return dict(cusolver_routine=peer.last_routine, cusolver_median_s=med,
                cusolver_samples_s=samples, cusolver_max_eig_err=_error(w, exact))


def _error(w, exact):
    """max |w - exact| (NaN if the counts differ: an exact value within rounding of VL or VU)."""
    w = _host(w)
    if w.shape != exact.shape:
        return float("nan")
    return float(np.abs(w - exact).max()) if w.size else 0.0


def _time_cusolvermp(args, mp_peer, a, b, exact, xp):
    med, samples, w = timed(lambda: mp_peer.solve(a, b), args.repeat, args.warmup, lambda: synchronize(xp))
    row = dict(cusolvermp_median_s=med, cusolvermp_samples_s=samples)
    if a.grid.rank == 0:
        row["cusolvermp_max_eig_err"] = float(np.abs(_host(w) - exact).max())
    return row


def _report(say, row):
    med, samples, stages = row["ours_median_s"], row["ours_samples_s"], row["ours_stages_s"]
    say(f"\nn={row['n']} nb={row['nb']} method {row['method']} reduction {row['reduction']} "
        f"sytrd loop {row['sytrd_loop']} "
        f"range {row['range']} "
        f"({row['eigenpairs']} eigenpairs): solvers.sygvd median {med:.3f} s "
        f"(samples {', '.join(f'{s:.3f}' for s in samples)})"
        f", max |λ-λ_exact| {row.get('ours_max_eig_err', float('nan')):.2e}")
    say("  stages (median solve): " + ", ".join(f"{k} {v:.3f}" for k, v in stages.items()))
    if row.get("sy2sb_tflops") is not None:
        say(f"  sy2sb achieved {row['sy2sb_tflops']:.2f} TFLOP/s (4n³/3 flops, x4 complex)")
    say(f"  memory, largest rank: host peak {row['max_rank_host_peak_bytes'] / 2**30:.2f} GiB, "
        f"device pool {row['max_rank_device_pool_bytes'] / 2**30:.2f} GiB (process high-water marks)")
    if "stage_peaks" in row:
        say(f"  live memory per stage above the inputs, peak/end, rank 0's {row['stage_peaks']}")
    say("  " + row["ours_stage_table"].replace("\n", "\n  "))
    if "factored_median_s" in row:
        say(f"  factored B: potrf alone {row['potrf_s']:.3f} s; each later solve against the factor "
            f"median {row['factored_median_s']:.3f} s ({100 * row['factored_saving']:.1f}% less)")
    if "cusolver_error" in row:
        say(f"  cuSOLVER failed, no ratio: {row['cusolver_error']}")
    if "cusolver_median_s" in row:
        say(f"  cuSOLVER {row['cusolver_routine']} median {row['cusolver_median_s']:.3f} s, "
            f"max |λ-λ_exact| {row['cusolver_max_eig_err']:.2e}; ratio ours/cuSOLVER = {row['ratio']:.2f}")
    if "cusolvermp_median_s" in row:
        say(f"  cuSOLVERMp sygvd median {row['cusolvermp_median_s']:.3f} s, "
            f"max |λ-λ_exact| {row.get('cusolvermp_max_eig_err', float('nan')):.2e}; "
            f"ratio ours/cuSOLVERMp = {row['ratio_cusolvermp']:.2f}")


# What a subset does not change: the checks, B's factor and the reduction to tridiagonal form.
_REDUCTION = ("validate", "potrf", "sygst", "hegst", "sytrd", "hetrd", "sy2sb", "he2hb", "sb2st",
              "hb2st")
# The tridiagonal solve's stages; every other stage after the reduction is a back-transformation.
_TRIDIAGONAL = ("stebz", "stemr", "stein", "stedc", "sterf")


def _report_savings(say, rows):
    """For each subset row beside an all-eigenpairs row of the same method and reduction: the
    time of the tridiagonal solve and the back-transformations (every stage after the
    reduction) of each, each apart too, and what the subset saves of the full solve's."""
    def after(row, stages=None):
        return sum(t for stage, t in row["ours_stages_s"].items() if stage not in _REDUCTION
                   and (stages is None or (stage in _TRIDIAGONAL) == (stages == "tridiagonal")))

    def saved(part, full, stages=None):
        return 1 - after(part, stages) / after(full, stages) if after(full, stages) else float("nan")

    for full in (r for r in rows if r["range"] == "A"):
        for part in (r for r in rows if r["range"] != "A" and r["method"] == full["method"]
                     and r.get("sytrd_loop") == full.get("sytrd_loop")
                     and r["reduction"] == full["reduction"]):
            part["saving_after_reduction"] = saved(part, full)
            apart = "; ".join(
                f"{what} {after(part, what):.3f} s against {after(full, what):.3f} s "
                f"({100 * saved(part, full, what):.1f}% saved)"
                for what in ("tridiagonal", "back-transformations"))
            say(f"\nsubset {part['range']} ({part['eigenpairs']} eigenpairs) against all, method "
                f"{full['method']}, reduction {full['reduction']}: tridiagonal solve + "
                f"back-transformations {after(part):.3f} s "
                f"against {after(full):.3f} s, {100 * part['saving_after_reduction']:.1f}% saved "
                f"({apart}); whole solve "
                f"{part['ours_median_s']:.3f} s against {full['ours_median_s']:.3f} s")


def _host(x):
    return to_host(x).astype(np.float64)


if __name__ == "__main__":
    sys.exit(main())
