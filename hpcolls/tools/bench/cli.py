"""Collectives benchmark, nccl-tests style: python -m hpcolls.bench (under mpiexec / srun).

  python -m hpcolls.bench --coll allreduce,bcast,reduce,allgather,reduce_scatter [--plot us.png]
  python -m hpcolls.bench --coll allreduce,allgather --protocol ll,sentinel,ll128,auto --max-bytes 67108864

Every algorithm is timed in the same run on the same kind of buffers: hpcolls' own route (auto:
the native kernels whole or in pieces, NCCL past their limit where every rank has its own GPU),
Allreduce's forced one-shot and two-shot, NCCL called directly where it runs, MPI on device
buffers as hpcolls carries them without its native path (staged through host memory on an MPI
that is not CUDA-aware), and mpi4py on host buffers. Per collective, size and algorithm a row
gives nccl-tests' columns (size, count, type, redop, root; algbw and busbw with nccl-tests'
factor per collective: allreduce 2(n-1)/n, allgather and reduce_scatter (n-1)/n, bcast and reduce
1, from its doc/PERFORMANCE.md), the device time per call from replays of a CUDA graph of
--graph-calls calls (rows through MPI cannot be captured: '-') and the host time per call of
--iters back-to-back calls, medians over --reps repetitions each taken at the slowest rank, the
route the call took, the number of wrong elements in a checked call, and the ratios the targets
are stated in: the device time against the native (auto) Allreduce of the same size ('xAR'), and
the MPI route's time (device buffers: 'mpi/'; host buffers: 'mpih/') over this row's. With
--hierarchy K, the hierarchical path's rows over emulated nodes of K ranks join them
(hpcolls/tools/bench/hierarchy_rows.py). With --protocol, hpcolls' route with each protocol
forced (HPCOLLS_PROTOCOL; a row the plan does not run on that protocol is skipped, the reason
printed) joins them, with auto (the selection table's choice) and a device-to-device copy of the
row's bytes on each rank, the memory floor ('copy').

Also measured, once per run unless --no-floors: the host time of one Python Allreduce call next to
a bare kernel launch and cupy's NCCL call, and the device time of a one-shot call in a graph beside
an empty kernel's (hpcolls/tools/bench/floors.py). Without a GPU it times MPI on host buffers
only.
"""
import argparse
import json
import sys

import numpy as np
from mpi4py import MPI

from ... import dtypes, native_module
from ...binding import select_device
from . import cases, floors, hierarchy_rows, runners
from .plot import draw, require_matplotlib
from .timing import graph_timed, host_timed

DEFAULT_ALGOS = ("auto", "nccl", "mpi-device", "mpi")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m hpcolls.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--coll", default="allreduce",
                   help=f"comma-separated collectives, of {','.join(cases.COLLECTIVES)} (default allreduce)")
    p.add_argument("--min-bytes", type=int, default=8, help="smallest size (default 8)")
    p.add_argument("--max-bytes", type=int, default=16 << 20, help="largest size (default 16 MiB)")
    p.add_argument("--factor", type=int, default=4, help="size step factor (default 4)")
    p.add_argument("--dtype", default="float64", choices=[n for n in dtypes.NAMES if n != "bfloat16"])
    p.add_argument("--op", default="sum", choices=sorted(cases.MPI_OPS))
    p.add_argument("--root", type=int, default=0, help="root of bcast and reduce (default 0)")
    p.add_argument("--algos", default=",".join(DEFAULT_ALGOS),
                   help=f"comma-separated subset of {','.join(runners.GPU_ALGOS)} (default {','.join(DEFAULT_ALGOS)}; "
                        "GPU runs; CPU runs time mpi)")
    p.add_argument("--protocol", metavar="LIST",
                   help="comma-separated subset of auto," + ",".join(runners.PROTOCOL_ALGOS) + ": also hpcolls' "
                        "route with each protocol forced (HPCOLLS_PROTOCOL), in the same run, and the copy floor "
                        "(a device-to-device copy of the row's bytes per rank); GPU runs")
    p.add_argument("--iters", type=int, default=50, help="back-to-back calls per repetition of the host time")
    p.add_argument("--reps", type=int, default=20, help="timed repetitions (median/min/max over these)")
    p.add_argument("--warmup", type=int, default=5, help="untimed repetitions first")
    p.add_argument("--graph-calls", type=int, default=200, help="calls in the CUDA graph of the device time")
    p.add_argument("--no-graph", action="store_true", help="no device time (no CUDA graphs): host time only")
    p.add_argument("--graph", action="store_true", help=argparse.SUPPRESS)  # the default now; old command lines
    p.add_argument("--dependent-launch-ab", action="store_true",
                   help="also the floors' graph device time with HPCOLLS_DEPENDENT_LAUNCH=0 and =1, each on a "
                        "communicator of its own (on by default since 2026-12-04: see docs/PERFORMANCE.md)")
    p.add_argument("--no-kernel-trace", action="store_true",
                   help="skip the kernels' own device time, which CUPTI records through torch.profiler "
                        "(measured only where torch is installed)")
    p.add_argument("--no-floors", action="store_true", help="skip the floors (host and device time of one call)")
    p.add_argument("--json", metavar="PATH", help="also write every row as JSON")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw µs against bytes, log-log, a panel per collective and a line per algorithm "
                        "(needs matplotlib: pip install hpcolls[plot])")
    p.add_argument("--no-inplace", action="store_true", help="skip the in-place rows")
    p.add_argument("--hierarchy", type=int, metavar="K",
                   help="also the hierarchical path's rows (hpcolls/tools/bench/hierarchy_rows.py: "
                        f"{', '.join(hierarchy_rows.ALGOS)}) over emulated nodes of K ranks (HPCOLLS_NODE_SIZE=K; "
                        "0: the nodes MPI sees), beside the other --algos (mpi-device: flat MPI on the same device "
                        "buffers; auto: all ranks one node, the flat native upper bound); GPU runs")
    args = p.parse_args(argv)
    colls = args.coll.split(",")
    unknown = [c for c in colls if c not in cases.COLLECTIVES]
    if unknown:
        p.error(f"--coll: {','.join(unknown)} not among {','.join(cases.COLLECTIVES)}")
    args.colls = sorted(colls, key=cases.COLLECTIVES.index)  # Allreduce first: the others' ratios need it
    args.algo_list = args.algos.split(",")
    unknown = [a for a in args.algo_list if a not in runners.GPU_ALGOS]
    if unknown:
        p.error(f"--algos: {','.join(unknown)} not among {','.join(runners.GPU_ALGOS)}")
    if args.protocol:
        protocols = args.protocol.split(",")
        unknown = [x for x in protocols if x not in ("auto", *runners.PROTOCOL_ALGOS)]
        if unknown:
            p.error(f"--protocol: {','.join(unknown)} not among auto,{','.join(runners.PROTOCOL_ALGOS)}")
        args.algo_list += [x for x in (*protocols, "copy") if x not in args.algo_list]
    if args.hierarchy is not None:
        if args.hierarchy < 0:
            p.error("--hierarchy: K is a node size (0: the nodes MPI sees)")
        args.algo_list += list(hierarchy_rows.ALGOS)
    if args.plot:
        require_matplotlib(p.error)
    return args


def steps(args):
    b = max(args.min_bytes, 1)
    while b <= args.max_bytes:
        yield b
        b *= args.factor


HEAD = (f"{'coll':>14} {'size(B)':>10} {'count':>9} {'type':>8} {'redop':>5} {'root':>4} {'algo':>12} "
        f"{'route':>12} {'place':>5} {'dev us':>8} {'host us':>8} {'algbw':>8} {'busbw':>8} {'xAR':>5} "
        f"{'mpi/':>6} {'mpih/':>6} {'#wrong':>6}")


def _f(value, width, precision):
    return f"{value:{width}.{precision}f}" if value is not None else f"{'-':>{width}}"


def print_row(r):
    print(f"{r['coll']:>14} {r['bytes']:>10} {r['count']:>9} {r['dtype']:>8} {r['op']:>5} {r['root']:>4} "
          f"{r['algo']:>12} {r['route']:>12} {'in' if r['inplace'] else 'out':>5} {_f(r['device_us'], 8, 2)} "
          f"{r['host_us']:8.2f} {r['algbw_GBs']:8.3f} {r['busbw_GBs']:8.3f} {_f(r['x_allreduce'], 5, 2)} "
          f"{_f(r['mpi_device_over'], 6, 1)} {_f(r['mpi_host_over'], 6, 1)} {r['wrong']:>6}", flush=True)


def count_wrong(cupy, case, check, want):
    """Wrong elements of this rank's result after `check()` from reset buffers."""
    case.reset()
    check()
    if case.result is None:
        return 0
    got = cupy.asnumpy(case.result) if cupy is not None and isinstance(case.result, cupy.ndarray) else case.result
    return int(np.count_nonzero(got != want))


def measure(args, cupy, coll, algo, block, dtype, inplace, want):
    """The row of one collective, size and algorithm (without its ratios), or None where that
    algorithm has no such call."""
    comm = MPI.COMM_WORLD
    on_device = cupy is not None and algo != "mpi"
    xp = cupy if on_device else np
    case = cases.case(xp, coll, block, dtype, inplace, comm.rank, comm.size, args.root, args.op)
    size = block * dtype.itemsize * (comm.size if coll in cases.BLOCKS else 1)
    found = hierarchy_rows.caller(args.hierarchy, algo, coll, case) if algo in hierarchy_rows.ALGOS else \
        runners.caller(cupy, algo, coll, case, size)
    if found is None:
        return None
    fn, route, detail = found
    sync = cupy.cuda.Device().synchronize if on_device else None
    host = host_timed(args, fn, sync)
    # The hierarchical rows are host-timed as the calls users make eagerly run: captured, their host
    # step would be a graph's host node, timed on CUDA's host-function thread instead.
    graphed = graph_timed(args, cupy, fn) if on_device and not args.no_graph and algo not in hierarchy_rows.ALGOS \
        else None
    device, check = (None, fn) if graphed is None else graphed
    if graphed is not None and inplace:
        check = fn  # a graph's in-place calls compound: one eager call is checked instead
    wrong = 0 if algo == "copy" else comm.allreduce(count_wrong(cupy, case, check, want))  # the copy: no result
    time = device[0] if device is not None else host[0]
    algbw = size / time / 1e3
    return dict(coll=coll, bytes=size, count=size // dtype.itemsize, dtype=dtype.name,
                op=args.op if coll in cases.REDUCES else "none", root=args.root if coll in cases.ROOTED else -1,
                algo=algo, route=route, route_detail=detail, inplace=inplace,
                device_us=None if device is None else device[0], device_min_us=None if device is None else device[1],
                device_max_us=None if device is None else device[2], host_us=host[0], host_min_us=host[1],
                host_max_us=host[2], timing="graph" if device is not None else "host", median_us=time,
                algbw_GBs=algbw, busbw_GBs=algbw * cases.busbw_factor(coll, comm.size), wrong=wrong, ranks=comm.size)


def add_ratios(rows, allreduce):
    """The targets' ratios on a collective's rows of one size and place: device time against the
    native (auto) Allreduce of the same size step (`allreduce`, its row or None) for hpcolls' rows,
    and the MPI routes' time over each row's."""
    by_algo = {r["algo"]: r for r in rows}
    for r in rows:
        ours = r["algo"] in runners.HPCOLLS_ALGOS and r["device_us"] is not None
        has = allreduce is not None and allreduce["device_us"] is not None and r["coll"] != "allreduce"
        r["x_allreduce"] = r["device_us"] / allreduce["device_us"] if ours and has else None
        for key, algo in (("mpi_device_over", "mpi-device"), ("mpi_host_over", "mpi")):
            other = by_algo.get(algo)
            r[key] = other["median_us"] / r["median_us"] if other is not None and r["algo"] != algo else None


def run(args, cupy):
    """Every row, printed by rank 0 as it is measured (a size's rows of one collective together)."""
    comm = MPI.COMM_WORLD
    dtype = np.dtype(args.dtype)
    algos = args.algo_list if cupy is not None else ["mpi"]
    rows = []
    for step in steps(args):
        for inplace in ((False,) if args.no_inplace else (False, True)):
            allreduce = None
            for coll in args.colls:
                block = cases.block_count(coll, step, dtype.itemsize, comm.size)
                if block == 0 or (coll == "bcast" and inplace):  # Bcast has one buffer: no other place
                    continue
                want = cases.expected(coll, block, dtype, comm.size, comm.rank, args.root, args.op)
                group = [r for algo in algos
                         if (r := measure(args, cupy, coll, algo, block, dtype, inplace, want)) is not None]
                if coll == "allreduce":
                    allreduce = next((r for r in group if r["algo"] == "auto"), None)
                add_ratios(group, allreduce)
                rows += group
                if comm.rank == 0:
                    for r in group:
                        print_row(r)
    return rows


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    comm = MPI.COMM_WORLD
    cupy = None
    if native_module.gpu_available():
        try:
            import cupy  # optional: without it the run times host buffers only
            select_device(comm)
        except ImportError:
            cupy = None
    if comm.rank == 0:
        where = f"{comm.size} ranks, {native_module.device_count()} GPU(s) visible" if cupy is not None else \
            f"{comm.size} ranks, CPU only (host buffers, MPI)"
        device = "no device time" if args.no_graph or cupy is None else \
            f"device: graphs of {args.graph_calls} calls x {args.reps} replays"
        print(f"# hpcolls.bench {','.join(args.colls)}: {where}; host: {args.iters} calls x {args.reps} reps, "
              f"{device} (warm-up {args.warmup}); busbw factors as nccl-tests' doc/PERFORMANCE.md: allreduce "
              "2(n-1)/n, allgather and reduce_scatter (n-1)/n, bcast and reduce 1")
        print(HEAD)
    try:
        rows = run(args, cupy)
        extra = floors.floors(args, cupy) if cupy is not None and not args.no_floors else {}
    finally:
        runners.release()  # a later main() in this process makes its own
    total_wrong = sum(r["wrong"] for r in rows)
    if comm.rank == 0:
        if extra:
            floors.report(args, extra)
        print(f"# total wrong elements: {total_wrong}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"rows": rows, **extra, "argv": sys.argv, "ranks": comm.size}, f, indent=1)
        if args.plot:
            draw(rows, args.plot, f"{comm.size} ranks")
            print(f"# plot: {args.plot}")
    return 1 if total_wrong else 0
