"""Command line of the distributed sygvd: ``[srun | mpiexec -n P] python -m solvers.sygvd``.

Error policy: every failure that the ranks can agree on (bad arguments, unreadable files, bad
grid, non-finite input, B not positive definite) is decided collectively, printed once by
rank 0 as one line, and makes every rank exit non-zero. Anything unexpected (a bug) aborts the
whole job after printing the traceback, so that no rank is left waiting in a collective.
"""
import argparse
import os
import sys
import time
import traceback

import numpy as np

from ..agreement import Agreement
from ..arguments import DTYPES
from ..backend.arrays import module_for_device, to_host
from ..backend.collectives import create_collectives
from ..backend.device import resolve_device, select_device
from ..backend.threads import policy_for
from ..distributed.distmatrix import DistMatrix
from ..distributed.grid import ProcessGrid, parse_shape
from ..distributed.io import check_writable, read_matrix, write_results
from ..errors import InputError, NotPositiveDefiniteError
from ..plan import BAND_TARGET, DEFAULT_NB, METHODS, REDUCTIONS, resolve
from ..problems import known_spectrum_problem
from ..subset import EigenRange, positions
from ..sygvd import sygvd
from .check import THRESHOLD, eigen_ratios, eigenvalue_ratio, full_from_triangle
from .report import print_header, stage_table, versions

# The embedded problem's last line: where a first run goes from here.
NEXT_STEPS = ("\nnext: a bigger problem (--n 4096), complex Hermitian (--dtype complex128), some "
              "eigenpairs (--range I:1:100), eigenvalues only (--jobz N), your own matrices "
              "(--input A.npy B.npy), how the ranks solve it (--method, --reduction, --grid, "
              "--nb); every option: --help")

EXIT_FAIL = 1
EXIT_USAGE = 2

DESCRIPTION = """\
Distributed generalized symmetric/Hermitian-definite eigensolver (LAPACK/ScaLAPACK sygvd and
hegvd semantics):
  itype 1:  A x = λ B x     itype 2:  A B x = λ x     itype 3:  B A x = λ x
with A symmetric (Hermitian) and B symmetric (Hermitian) positive definite, real or complex,
on a 2D block-cyclic process grid.
Run one MPI rank per GPU (or per CPU core group): srun python -m solvers.sygvd ... or
mpiexec -n P python -m solvers.sygvd ...

Without --input, an embedded test problem with a KNOWN spectrum is solved
(A = L Q Λ Qᴴ Lᴴ, B = L Lᴴ for itype 1; A = L⁻ᴴ Q Λ Qᴴ L⁻¹ for itypes 2, 3; random orthogonal
or unitary Q and well-conditioned L from --seed) and the error against the exact eigenvalues is reported.
"""

EPILOG = """\
exit status: 0 success (and --check passed), 1 failure (bad input, B not positive definite,
--check failed), 2 bad command line.
example: mpiexec -n 4 python -m solvers.sygvd --n 1000 --nb 32 --grid 2x2 --check
"""


def _launcher_rank():
    """This process's rank from the launcher's environment, without initializing MPI (so that
    --help and command-line errors print once and need no MPI)."""
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "MV2_COMM_WORLD_RANK"):
        if var in os.environ:
            try:
                return int(os.environ[var])
            except ValueError:
                pass
    return 0


class _RankZeroParser(argparse.ArgumentParser):
    """argparse that prints (help, usage errors) only on rank 0; every rank still exits."""

    def _print_message(self, message, file=None):
        if _launcher_rank() == 0:
            super()._print_message(message, file)


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _seed(text):
    """numpy's seeds: an integer in [0, 2**32)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"must be an integer from 0 to 2**32 - 1, got {text!r}")
    return value


def _eigen_range(text):
    try:
        return EigenRange.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _grid_shape(text):
    try:
        return parse_shape(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser():
    p = _RankZeroParser(prog="python -m solvers.sygvd", description=DESCRIPTION, epilog=EPILOG,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    prob = p.add_argument_group("problem")
    prob.add_argument("--n", type=_positive_int, default=512,
                      help="order of the embedded test problem (ignored with --input; default 512)")
    prob.add_argument("--input", nargs=2, metavar=("A", "B"),
                      help="read A and B from files (.npy or Matrix Market .mtx/.mm[.gz], real or "
                           "complex, 'symmetric'/'hermitian' ones included); only the --uplo "
                           "triangle of each is used, and the imaginary parts of the diagonals "
                           "are ignored")
    prob.add_argument("--itype", type=int, choices=(1, 2, 3), default=1,
                      help="1: A x = λ B x, 2: A B x = λ x, 3: B A x = λ x (default 1)")
    prob.add_argument("--jobz", choices=("N", "V"), default="V", type=str.upper,
                      help="N: eigenvalues only, V: eigenvalues and B-orthonormal eigenvectors "
                           "(default V)")
    prob.add_argument("--uplo", choices=("L", "U"), default="L", type=str.upper,
                      help="which triangle of A and B is read; the other is never touched "
                           "(default L)")
    prob.add_argument("--dtype", choices=DTYPES, default="float64",
                      help="working precision; complex64/complex128 for Hermitian problems "
                           "(eigenvalues are real: float32/float64) (default float64)")
    prob.add_argument("--range", type=_eigen_range, default=None, metavar="A|I:IL:IU|V:VL:VU",
                      help="which eigenpairs (LAPACK's RANGE, as ScaLAPACK's p?sygvx): A all "
                           "(default); I:IL:IU the IL-th to IU-th smallest, 1-BASED and inclusive "
                           "(1 <= IL <= IU <= n; scipy's subset_by_index=[IL-1, IU-1]); V:VL:VU "
                           "those in the half-open interval (VL, VU] (inf/-inf allowed). The "
                           "distributed method finds them by bisection + MRRR (a few on the CPU), "
                           "multisection + inverse iteration (up to a quarter of n on GPUs) or "
                           "divide and conquer of all (more) and back-transforms "
                           "only the k wanted columns; the single method keeps them from its "
                           "full solve")
    prob.add_argument("--seed", type=_seed, default=None,
                      help="seed of the embedded problem, 0 to 2**32 - 1 (default: random, printed)")
    dist = p.add_argument_group("distribution and hardware")
    dist.add_argument("--nb", type=_positive_int, default=None,
                      help=f"block size of the block-cyclic layout (default {DEFAULT_NB['cpu']} on CPU, "
                           f"{DEFAULT_NB['gpu']} on GPU, at most n)")
    dist.add_argument("--grid", type=_grid_shape, default=None, metavar="PRxPC",
                      help="process grid, e.g. 2x2; PR*PC must equal the number of ranks "
                           "(default: as square as possible)")
    dist.add_argument("--device", choices=("auto", "cpu", "gpu"), default="auto",
                      help="cpu: numpy; gpu: cupy, one GPU per rank; auto: gpu if "
                           "hpcolls.gpu_available() (default auto)")
    dist.add_argument("--collectives", choices=("auto", "hpcolls", "nccl", "mpi"), default="auto",
                      help="transport of the solver's collectives on GPU: hpcolls kernels, NCCL "
                           "(through hpcolls), or MPI; auto: hpcolls on GPU. A CPU run's host "
                           "buffers always go to MPI (the header says so)")
    dist.add_argument("--method", choices=[m for m in METHODS if m != "replicated"], default="auto",
                      help="distributed: the stages over the grid; single: the whole problem by "
                           "one LAPACK/cuSOLVER call on rank 0, results handed to all; auto: "
                           "single at one rank and, on CPUs, below the measured crossover order "
                           "(default auto)")
    dist.add_argument("--reduction", choices=REDUCTIONS, default="auto",
                      help="reduction to tridiagonal form in the distributed stages: 1stage = "
                           "sytrd/hetrd (a matrix-vector product per column) + ormtr; 2stage = "
                           "sy2sb (dense to band, GEMMs) + sb2st (bulge chasing) + two "
                           "back-transformations (ormtr_sb2st, ormtr_sy2sb); auto: 2stage on GPUs "
                           "from the crossover order in solvers/plan.py, else 1stage "
                           "(default auto)")
    dist.add_argument("--band", type=_positive_int, default=None, metavar="B",
                      help=f"2stage's bandwidth: a divisor of --nb (default: the largest divisor "
                           f"of nb up to {BAND_TARGET['gpu']} on GPU, {BAND_TARGET['cpu']} on CPU)")
    run = p.add_argument_group("run")
    run.add_argument("--check", action="store_true",
                     help="compute the residual ‖A Z − B Z Λ‖₁/(‖A‖₁‖Z‖₁ n ε) (dsgt01 forms per "
                          "itype) and ‖Zᵀ B Z − I‖₁/(n ε) on rank 0; FAIL (exit 1) above 400")
    run.add_argument("--repeat", type=_positive_int, default=1,
                     help="solve this many times (timings of each; stage table of the last)")
    run.add_argument("--output", metavar="PATH",
                     help="write eigenvalues ('w', the real dtype) and, with jobz=V, eigenvectors "
                          "('z') to PATH, an .npz (.npz is appended to other names, as numpy "
                          "does); checked before the solve")
    run.add_argument("--progress", action="store_true",
                     help="print a line as each stage finishes (automatic for n >= 4096)")
    return p


def parse_args(argv=None):
    return build_parser().parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    # Imported after the arguments parse, not at the top: importing mpi4py.MPI initializes MPI,
    # which --help and a bad command line need not (solvers/__init__.py).
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    try:
        return _run(args, comm)
    except (InputError, NotPositiveDefiniteError) as exc:
        # Raised identically on every rank (decided collectively): report once, exit everywhere.
        if comm.Get_rank() == 0:
            print(f"error: {exc}", file=sys.stderr, flush=True)
        return EXIT_FAIL
    except Exception:
        sys.stderr.write(f"[rank {comm.Get_rank()}] unexpected error, aborting all ranks:\n"
                         f"{traceback.format_exc()}")
        sys.stderr.flush()
        comm.Abort(EXIT_FAIL)
        return EXIT_FAIL


def _run(args, comm):
    with Agreement(comm, "python -m solvers.sygvd") as call:
        call.record(**vars(args))      # ranks started with different command lines stop here
    rank = comm.Get_rank()
    say = _printer(rank)
    threads = policy_for(comm)   # before any BLAS work of the run (the problem's own included)
    device, device_reason = resolve_device(args.device)
    xp = _backend_or_error(module_for_device, device, comm)
    device_line = "cpu (numpy)"
    if device == "gpu":
        ids = comm.allgather(select_device(comm))
        name = xp.cuda.runtime.getDeviceProperties(ids[rank])["name"]
        name = name.decode() if isinstance(name, bytes) else name
        device_line = f"gpu (cupy, {name}), device id per rank {ids}"
    try:
        grid = ProcessGrid(comm, args.grid)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    coll = create_collectives(grid, args.collectives, xp)
    dtype = np.dtype(args.dtype)

    a_root, b_root, exact, n, source = _load_problem(args, coll, xp)
    # Every choice of the run, once (solvers/plan.py); a bad --band fails here on every rank.
    plan = resolve(xp, n, grid.size, complex_data=dtype.kind == "c",
                   nb=min(args.nb, n) if args.nb else None, method=args.method,
                   reduction=args.reduction, band=args.band, threads=threads)
    if rank == 0:
        print_header([
            ("solvers.sygvd", f"{_equation(args.itype)}, jobz={args.jobz}, uplo={args.uplo}, "
                              f"range={args.range or 'A'}"),
            ("problem", source),
            ("size", f"n={n}, nb={plan.nb}, dtype={dtype.name}"),
            *plan.header(),
            ("grid", f"{grid.nprow}x{grid.npcol} on {comm.Get_size()} MPI ranks"
                     f"{'' if args.grid else ' (default: as square as possible)'}"),
            ("device", f"{device_line} [{device_reason}]"),
            ("collectives", f"{coll.kind} via {coll.transport} [{coll.reason}]"),
            ("BLAS threads", threads.line),
            ("versions", versions(xp)),
        ])
    a = _scatter(a_root, n, dtype, grid, plan.nb, coll, xp)
    b = _scatter(b_root, n, dtype, grid, plan.nb, coll, xp)

    if args.progress or n >= 4096:
        coll.on_stage_end = lambda name, seconds: say(f"  stage {name} done ({seconds:.2f} s)")
    times = []
    for rep in range(args.repeat):
        coll.reset()
        comm.Barrier()
        start = time.perf_counter()
        w, z = sygvd(a, b, coll, itype=args.itype, jobz=args.jobz, uplo=args.uplo, subset=args.range,
                     plan=plan)
        times.append(time.perf_counter() - start)
        if args.repeat > 1:
            say(f"repetition {rep + 1}/{args.repeat}: {times[-1]:.4f} s")

    say(f"\nstage breakdown (rank 0; collective times are host wall-clock per call):\n"
        f"{stage_table(coll.stats, times[-1])}")
    if args.repeat > 1:
        say(f"time per solve: best {min(times):.4f} s, mean {sum(times) / len(times):.4f} s")

    w_host = to_host(w)   # the real dtype of the working precision (float32 for float32/complex64)
    say(f"eigenpairs: {w_host.shape[0]} of {n}" + (f" (range {args.range})" if args.range else ""))
    if exact is not None:
        exact = exact[positions(exact, args.range)]
        if exact.shape != w_host.shape:   # an exact eigenvalue within rounding of VL or VU
            say(f"known spectrum: {exact.size} exact eigenvalues in the range, {w_host.size} computed")
        elif exact.size:
            err = float(np.abs(w_host.astype(np.float64) - exact).max())
            say(f"known spectrum: max |λ - λ_exact| = {err:.3e} "
                f"(relative to max |λ_exact|: {err / max(np.abs(exact).max(), 1e-300):.3e})")
    z_root = z.gather(coll) if z is not None and (args.check or args.output) else None
    status = 0
    if args.check:
        status = _check(args, coll, a_root, b_root, w_host, z_root, dtype, say)
    if args.output and rank == 0:
        written = write_results(args.output, w_host, z_root, itype=args.itype, uplo=args.uplo)
        say(f"wrote {written}")
    if not args.input:
        say(NEXT_STEPS)
    grid.free()
    return status


def _printer(rank):
    def say(text):
        if rank == 0:
            print(text, flush=True)
    return say


def _equation(itype):
    return {1: "A x = λ B x (itype 1)", 2: "A B x = λ x (itype 2)", 3: "B A x = λ x (itype 3)"}[itype]


def _backend_or_error(module_for_device, device, comm):
    """The array module, or an InputError on every rank if cupy is missing anywhere."""
    try:
        xp, problem = module_for_device(device), None
    except ImportError as exc:
        xp, problem = None, str(exc)
    problems = [msg for msg in comm.allgather(problem) if msg]
    if problems:
        raise InputError(problems[0])
    return xp


def _load_problem(args, coll, xp):
    """(A, B, exact eigenvalues or None, n, description) — arrays only on rank 0.

    Rank 0 reads or generates; its verdict (n or an error message) is broadcast, so a bad file
    stops every rank with the same message.
    """
    rank = coll.grid.rank
    verdict = None
    a = b = exact = None
    if rank == 0:
        try:
            if args.output:
                check_writable(args.output)
            if args.input:
                a, b = (read_matrix(path) for path in args.input)
                for name, m in (("A", a), ("B", b)):
                    if m.shape[0] != m.shape[1]:
                        raise InputError(f"{name} must be square, got {m.shape[0]}x{m.shape[1]}")
                    if np.iscomplexobj(m) and np.dtype(args.dtype).kind != "c":
                        raise InputError(f"{name} is complex but --dtype is {args.dtype}: use "
                                         f"--dtype complex128 (or complex64) for a Hermitian problem")
                if a.shape[0] == 0:
                    raise InputError(f"{args.input[0]} holds a 0 x 0 matrix: there is no "
                                     "eigenproblem to solve")
                if a.shape != b.shape:
                    raise InputError(f"A is {a.shape[0]}x{a.shape[1]} but B is "
                                     f"{b.shape[0]}x{b.shape[1]}")
                verdict = ("ok", a.shape[0], f"files {args.input[0]}, {args.input[1]}")
            else:
                seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % 2**31)
                a, b, exact = known_spectrum_problem(args.n, args.itype, seed, xp,
                                                     hermitian=np.dtype(args.dtype).kind == "c")
                kind = "complex Hermitian" if np.dtype(args.dtype).kind == "c" else "real symmetric"
                verdict = ("ok", args.n, f"embedded {kind} test problem with known eigenvalues "
                                         f"(seed {seed}; exact eigenvalues Λ uniform in [-1, 1])")
        except InputError as exc:
            verdict = ("error", str(exc), "")
    verdict = coll.bcast_obj(verdict, root=0)
    if verdict[0] == "error":
        raise InputError(verdict[1])
    return a, b, exact, verdict[1], verdict[2]


def _scatter(global_root, n, dtype, grid, nb, coll, xp):
    return DistMatrix.scatter(global_root, (n, n), dtype, grid, nb, coll, root=0, xp=xp)


def _check(args, coll, a_root, b_root, w_host, z_root, dtype, say):
    """Residual ratios on rank 0; the PASS/FAIL verdict is broadcast (the exit code of all)."""
    ratios = None
    if coll.grid.rank == 0:
        lower = args.uplo == "L"
        eps = float(np.finfo(dtype).eps)
        wide = np.complex128 if dtype.kind == "c" else np.float64
        # The matrices actually solved: rounded to the working precision, referenced triangle.
        a = full_from_triangle(to_host(a_root).astype(dtype).astype(wide), lower)
        b = full_from_triangle(to_host(b_root).astype(dtype).astype(wide), lower)
        w64 = w_host.astype(np.float64)
        if z_root is not None:
            xp = coll.xp     # the residual products run on the GPU in a GPU run
            ratios = eigen_ratios(xp.asarray(a), xp.asarray(b), xp.asarray(w64),
                                  xp.asarray(z_root, dtype=wide), args.itype, eps)
        else:
            ratios = eigenvalue_ratio(a, b, w64, args.itype, eps, subset=args.range)
    ratios = coll.bcast_obj(ratios, root=0)
    ok = True
    for name, value in ratios.items():
        passed = bool(np.isfinite(value)) and value < THRESHOLD
        ok &= passed
        say(f"check {name:<13} = {value:10.3f}   {'PASS' if passed else 'FAIL'} (threshold {THRESHOLD:g})")
    return 0 if ok else EXIT_FAIL
