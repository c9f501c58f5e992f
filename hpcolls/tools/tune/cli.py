"""python -m hpcolls tune: measures where the native kernels' protocols and algorithms cross over on
this machine, at this rank count and ranks per GPU, and stores the selection rows they give where
later communicators of the same shape find them (hpcolls/tuned_table.py).

  mpiexec -n 4 python -m hpcolls tune            # each rank on its GPU, or ranks sharing one under MPS
  mpiexec -n 4 python -m hpcolls tune --quick    # a coarser grid, fewer replays

Run it with the ranks the program will run with: a table applies to its rank count, ranks per GPU,
GPU model and kernel set only. For Allreduce, Allgather, Bcast, Reduce and Reduce_scatter, over
sizes of 8 B to 64 MiB (the plan's bytes: a rank's block for Allgather and Reduce_scatter), every
candidate is timed forced on a communicator of its own (the protocols LL, sentinel and, where its
probe passed, LL128; for Allreduce one-shot and two-shot on each; NCCL where every rank has its own
GPU) by the benchmark's CUDA-graph replay (median of --reps replays, each at the slowest rank), and
the crossovers are the boundaries that cost least over the grid (hpcolls/tools/tune/crossovers.py).
A collective with one candidate only has nothing to choose and keeps the built-in rows, as does one
the time budget (--max-seconds) cut short. Rank 0 decides and stores: HPCOLLS_TUNE_FILE, else
$XDG_CACHE_HOME/hpcolls/selection.json (~/.cache/hpcolls/...), replacing an entry of the same key.
Then a new communicator is opened to show that it runs the stored table; `python -m hpcolls info`
says which table is in force.
"""
import argparse
import json
import sys
import time

from mpi4py import MPI

from ... import native_module, tuned_table
from ...binding import select_device
from ...communicator import Communicator
from ...peer_group import ranks_sharing_gpu
from ..bench import runners
from . import measure
from .crossovers import candidate_name, derive_row

COLLECTIVES = ("allreduce", "allgather", "bcast", "reduce", "reduce_scatter")
FULL_GRID = [8, 64, 512, 4 << 10] + [16 << 10 << i for i in range(13)]  # 8 B .. 64 MiB, x2 from 16 KiB
QUICK_GRID = [8, 512, 8 << 10, 32 << 10, 128 << 10, 512 << 10, 2 << 20, 8 << 20, 64 << 20]
DEFAULT_SECONDS, QUICK_SECONDS = 100.0, 50.0


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m hpcolls tune", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--coll", default=",".join(COLLECTIVES),
                   help=f"comma-separated collectives, of {','.join(COLLECTIVES)} (default all)")
    p.add_argument("--quick", action="store_true",
                   help=f"a coarser grid ({len(QUICK_GRID)} sizes), fewer replays, {QUICK_SECONDS:.0f} s budget")
    p.add_argument("--max-seconds", type=float,
                   help=f"time budget of the measurements (default {DEFAULT_SECONDS:.0f}, --quick "
                        f"{QUICK_SECONDS:.0f}): a collective not measured in time keeps the built-in rows")
    p.add_argument("--max-bytes", type=int, default=64 << 20, help="largest size measured (default 64 MiB)")
    p.add_argument("--reps", type=int, help="timed replays per candidate and size (default 7, --quick 5)")
    p.add_argument("--warmup", type=int, help="untimed replays first (default 2, --quick 1)")
    p.add_argument("--graph-calls", type=int,
                   help="calls per CUDA graph for small messages (fewer for large ones; default 50, --quick 20)")
    p.add_argument("--dry-run", action="store_true", help="measure and print; store nothing")
    p.add_argument("--json", metavar="PATH", help="also write the measurements and the rows as JSON")
    args = p.parse_args(argv)
    colls = args.coll.split(",")
    unknown = [c for c in colls if c not in COLLECTIVES]
    if unknown:
        p.error(f"--coll: {','.join(unknown)} not among {','.join(COLLECTIVES)}")
    args.colls = [c for c in COLLECTIVES if c in colls]
    defaults = (QUICK_SECONDS, 5, 1, 20) if args.quick else (DEFAULT_SECONDS, 7, 2, 50)
    for name, default in zip(("max_seconds", "reps", "warmup", "graph_calls"), defaults):
        if getattr(args, name) is None:
            setattr(args, name, default)
    if args.max_seconds <= 0 or args.reps < 1 or args.warmup < 0 or args.graph_calls < 1:
        p.error("--max-seconds, --reps and --graph-calls must be positive, --warmup not negative")
    if args.max_bytes < 8:
        p.error("--max-bytes: at least 8")
    args.sizes = [b for b in (QUICK_GRID if args.quick else FULL_GRID) if b <= args.max_bytes]
    return args


def say(*lines):
    if MPI.COMM_WORLD.rank == 0:
        print(*lines, sep="\n", flush=True)


def _cell(t):
    return f"{'-':>16}" if t is None else f"{t:16.2f}"


def table_lines(coll, sizes, times, picks, row, base):
    """A collective's measurements: a line per size, a column per candidate (device µs), the pick
    of the tuned row; then the row beside the built-in one."""
    names = [candidate_name(*c) for c in times]
    lines = [f"## {coll}: device µs per call (graph replay, median at the slowest rank)",
             f"{'bytes':>10} " + " ".join(f"{n:>16}" for n in names) + f" {'tuned pick':>18}"]
    for i, b in enumerate(sizes):
        lines.append(f"{b:>10} " + " ".join(_cell(ts[i]) for ts in times.values()) + f" {picks[i] or '-':>18}")
    limits = [k for k in row if k not in ("collective", "max_ranks")]
    lines.append("   tuned:    " + ", ".join(f"{k} {_bytes(row[k])}" for k in limits))
    lines.append("   built-in: " + ", ".join(f"{k} {_bytes(base[k])}" for k in limits))
    return lines


def _bytes(b):
    return "-" if b is None else str(b)


def base_row(native, coll, ranks):
    """The built-in row a communicator of `ranks` ranks reads for `coll` (plan.cpp's lookup)."""
    rows = [r for r in native.selection_table() if r["collective"] == coll]
    return dict(next((r for r in rows if ranks <= r["max_ranks"]), rows[-1]))


def derive(native, args, measured):
    """Rank 0's rows and what to print from `measured` ({coll: (times, why stopped)})."""
    ranks = MPI.COMM_WORLD.size
    rows, lines = [], []
    for coll, (times, why) in measured.items():
        base = base_row(native, coll, ranks)
        if not times or why:
            lines.append(f"## {coll}: built-in rows kept ({why})")
            if times:  # what was measured before the budget ran out, for the record
                n = len(next(iter(times.values())))
                lines += table_lines(coll, args.sizes[:n], times, [None] * n, base, base)[:-2]
            continue
        plan_bytes = args.sizes[:len(next(iter(times.values())))]
        row, picks = derive_row(coll, ranks, plan_bytes, times, base)
        rows.append(row)
        lines += table_lines(coll, plan_bytes, times, picks, row, base)
    return rows, lines


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    comm = MPI.COMM_WORLD
    budget = measure.Budget(args.max_seconds, time.perf_counter)
    if not native_module.gpu_available():
        say("python -m hpcolls tune: no GPU here (or the native module is not built): nothing to measure")
        return 1
    try:
        import cupy
    except ImportError:
        say("python -m hpcolls tune: needs cupy (pip install hpcolls[cupy])")
        return 1
    native = native_module.load()
    device = select_device(comm)
    ranks_per_gpu = ranks_sharing_gpu(comm, native.device_info(device)["uuid"])
    key = tuned_table.machine_key(comm, native, device, ranks_per_gpu)
    path = tuned_table.store_path()
    say(f"# hpcolls tune: {comm.size} ranks, {key['ranks_per_gpu']} per GPU, {key['gpu_count']} x "
        f"{key['gpu_model']}; {key['kernel_set']}; {len(args.sizes)} sizes {args.sizes[0]}..{args.sizes[-1]} B "
        f"(the plan's bytes), float64 SUM, graphs of up to {args.graph_calls} calls x {args.reps} replays; "
        f"budget {args.max_seconds:.0f} s")
    measured = {}
    try:
        for coll in args.colls:
            if not budget.left():
                measured[coll] = ({}, "out of time before it")
                continue
            measured[coll] = measure.measure_collective(args, cupy, coll, args.sizes, budget)
    finally:
        runners.release()
    seconds = budget.used()
    decided = None
    if comm.rank == 0:
        try:
            rows, lines = derive(native, args, measured)
            native.check_selection_rows(rows)  # the plan's own check, before anything is stored
            decided = (rows, lines, None)
        except Exception as exc:  # noqa: BLE001 - said on every rank below, never a rank left waiting
            decided = (None, [], f"{exc.__class__.__name__}: {exc}")
    rows, lines, error = comm.bcast(decided, root=0)
    if error:
        raise RuntimeError(f"hpcolls tune: no table derived from the measurements ({error})")
    say(*lines, f"# measured in {seconds:.1f} s (budget {args.max_seconds:.0f} s)")
    stored = _store(args, path, key, rows, measured)
    if args.json and comm.rank == 0:
        with open(args.json, "w") as f:
            json.dump({"key": key, "sizes": args.sizes, "seconds": seconds, "rows": rows, "stored": stored,
                       "device_us": _by_name(measured)},
                      f, indent=1)
    if stored:
        _show_picked_up(device, rows)
    say(f"# tune done in {budget.used():.1f} s")
    return 0


def _by_name(measured):
    """The measurements as JSON holds them: {coll: {candidate name: [µs or None per size]}}."""
    return {c: {candidate_name(*k): v for k, v in t.items()} for c, (t, _) in measured.items() if t}


def _store(args, path, key, rows, measured):
    """Stores the rows (rank 0) and says where; False where nothing is stored."""
    comm = MPI.COMM_WORLD
    if not rows:
        say("# nothing measured to choose from: nothing stored (the built-in table stays in force)")
        return False
    if args.dry_run or path is None:
        say(f"# not stored ({'--dry-run' if args.dry_run else 'HPCOLLS_TUNE_FILE=none'})")
        return False
    error = None
    if comm.rank == 0:
        try:
            tuned_table.store(path, key, rows, measured={"sizes": args.sizes, "device_us": _by_name(measured)})
        except OSError as exc:
            error = str(exc)
    error = comm.bcast(error, root=0)
    if error:
        say(f"# could not store the table in {path}: {error}")
        return False
    say(f"# stored in {path} under: " + ", ".join(f"{k} {key[k]}" for k in tuned_table.KEY_FIELDS),
        "#   later communicators of this shape run it; HPCOLLS_TUNE_FILE=none turns it off, python -m hpcolls info "
        "shows it")
    return True


def _show_picked_up(device, rows):
    """Opens a new communicator over COMM_WORLD, as a program would, and says whether it runs the
    stored rows."""
    comm = Communicator(MPI.COMM_WORLD)
    try:
        nc = comm.native_comm(device)
        ours = None if nc is None else [dict(r) for r in nc.selection_rows]
        took = ours == [dict(r) for r in rows]
        say(f"# a new communicator over COMM_WORLD runs the tuned table: {'yes' if took else 'no'}"
            + ("" if took else f" ({comm.native_path if nc is None else 'its rows differ: see HPCOLLS_DEBUG=INFO'})"))
    finally:
        comm.close()
