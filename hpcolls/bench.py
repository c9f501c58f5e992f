"""AllReduce benchmark, nccl-tests style: python -m hpcolls.bench (under mpiexec / srun).

Every algorithm is timed in the same run on the same buffers: hpcolls one-shot, two-shot and
auto, NCCL (cupy's binding, called directly) and MPI (mpi4py on host buffers). Per size and
algorithm it reports median/min/max µs per call over --reps repetitions of --iters
back-to-back calls (warm-up excluded), algbw/busbw as nccl-tests defines them, and the number of
wrong elements in a checked call (data are small integers: exact in any summation order).

Also measured, once per run: the host time of one Python AllReduce call next to a bare kernel
launch and cupy's NCCL call (the host-overhead budget is counted above the bare launch), and the
device time of one small one-shot call from a CUDA graph of --graph-calls calls (with
--dependent-launch-ab, also with programmatic dependent launch off and on, side by side) beside
an empty kernel's in the same kind of graph, plain and with dependent launch (the floor), and,
where torch is installed, the kernel's own device time in that graph as CUPTI records it (the
graph's time per call also holds the gap before the next kernel starts).
With --graph, every row whose call can be captured is timed by replaying a CUDA graph of
--graph-calls calls instead (column "timing": graph): the kernels' own pace per size, which
back-to-back calls from Python hide behind the host's cost of issuing each call. Calls through
MPI cannot be captured; their rows stay eager and say so.
Without a GPU it times MPI on host buffers only.
"""
import argparse
import itertools
import json
import os
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

from . import dtypes

MPI_OPS = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}
GPU_ALGOS = ("oneshot", "twoshot", "auto", "nccl", "mpi")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m hpcolls.bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--min-bytes", type=int, default=8, help="smallest message (default 8)")
    p.add_argument("--max-bytes", type=int, default=16 << 20, help="largest message (default 16 MiB)")
    p.add_argument("--factor", type=int, default=4, help="size step factor (default 4)")
    p.add_argument("--dtype", default="float64", choices=[n for n in dtypes.NAMES if n != "bfloat16"])
    p.add_argument("--op", default="sum", choices=sorted(MPI_OPS))
    p.add_argument("--algos", default=",".join(GPU_ALGOS),
                   help=f"comma-separated subset of {','.join(GPU_ALGOS)} (GPU runs; CPU runs time mpi)")
    p.add_argument("--iters", type=int, default=50, help="back-to-back calls per repetition")
    p.add_argument("--reps", type=int, default=20, help="timed repetitions (median/min/max over these)")
    p.add_argument("--warmup", type=int, default=5, help="untimed repetitions first")
    p.add_argument("--graph-calls", type=int, default=200, help="calls in the CUDA graph for device time")
    p.add_argument("--graph", action="store_true",
                   help="time each size's rows by replaying a CUDA graph of --graph-calls calls (device time "
                        "per call) instead of back-to-back calls; rows through MPI stay eager (they cannot be "
                        "captured) and say so in the timing column")
    p.add_argument("--dependent-launch-ab", action="store_true",
                   help="also the graph's device time with HPCOLLS_DEPENDENT_LAUNCH=0 and =1, each on a "
                        "communicator of its own (on by default since 2026-12-04: see docs/PERFORMANCE.md)")
    p.add_argument("--no-kernel-trace", action="store_true",
                   help="skip the kernels' own device time, which CUPTI records through torch.profiler "
                        "(measured only where torch is installed)")
    p.add_argument("--json", metavar="PATH", help="also write every row as JSON")
    p.add_argument("--no-inplace", action="store_true", help="skip the in-place rows")
    return p.parse_args(argv)


def sizes(args, itemsize):
    b = max(args.min_bytes, itemsize)
    while b <= args.max_bytes:
        yield b // itemsize
        b *= args.factor


class Timer:
    """Per-call time of a callable over reps x iters calls, on the device clock when on GPU."""

    def __init__(self, cupy=None):
        self.cupy = cupy

    def __call__(self, fn, args):
        comm = MPI.COMM_WORLD
        samples = []
        for rep in range(args.warmup + args.reps):
            comm.Barrier()
            if self.cupy is not None:
                start, stop = self.cupy.cuda.Event(), self.cupy.cuda.Event()
                start.record()
                for _ in range(args.iters):
                    fn()
                stop.record()
                stop.synchronize()
                t = self.cupy.cuda.get_elapsed_time(start, stop) * 1e3 / args.iters
            else:
                t0 = time.perf_counter()
                for _ in range(args.iters):
                    fn()
                t = (time.perf_counter() - t0) * 1e6 / args.iters
            if rep >= args.warmup:
                samples.append(t)
        return slowest_rank_summary(samples)


def slowest_rank_summary(samples):
    """(median, min, max) over repetitions of per-call µs, each repetition taken at its slowest
    rank: a collective call is as slow as its slowest rank."""
    samples = np.array(samples, dtype=np.float64)
    MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, samples, op=MPI.MAX)
    return float(np.median(samples)), float(samples.min()), float(samples.max())


def graph_timed(args, cupy, fn):
    """((median, min, max) per-call µs, replay) for `fn` captured --graph-calls times into a CUDA
    graph on a stream of its own (cupy's current stream while capturing, which every caller of
    gpu_callers uses) and replayed; replay() runs the graph once more and waits for it. None when
    the call cannot be captured: a call through MPI raises GraphCaptureError before it enqueues
    anything, and every rank takes the same path for the same size, so every rank refuses."""
    from .errors import GraphCaptureError
    comm = MPI.COMM_WORLD
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        fn()  # any set-up (peer memory, an NCCL communicator) happens here, outside the capture
        s.synchronize()
        try:
            g = _capture(args, s, fn)
        except GraphCaptureError:
            g = None
    refused = comm.allgather(g is None)
    if any(refused) != all(refused):
        raise RuntimeError(f"hpcolls.bench: ranks {[r for r, no in enumerate(refused) if no]} could not capture "
                           "a call that the others captured: the ranks took different paths for one size")
    if g is None:
        return None

    def replay():
        cupy.cuda.get_current_stream().synchronize()  # what the caller did on its stream comes first
        g.launch(s)
        s.synchronize()
    return slowest_rank_summary(_replay_samples(args, cupy, s, g)), replay


def make_data(xp, count, dtype, rank):
    base = (xp.arange(count, dtype=np.int64) % 7 + rank + 1)
    return base.astype(dtype)


def expected(count, dtype, op, size):
    contributions = [make_data(np, count, dtype, r) for r in range(size)]
    from functools import reduce
    fn = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}[op]
    return reduce(fn, contributions).astype(dtype)


def gpu_callers(args, cupy, count, dtype, inplace):
    """{algo: (callable doing one call, result array)} for every requested GPU algorithm."""
    comm = MPI.COMM_WORLD
    op = MPI_OPS[args.op]
    out = {}
    for algo in args.algos.split(","):
        send = make_data(cupy, count, dtype, comm.rank)
        recv = send if inplace else cupy.empty_like(send)
        sendarg = MPI.IN_PLACE if inplace else send
        if algo in ("oneshot", "twoshot", "auto"):
            c = communicator(algo)
            out[algo] = (lambda c=c, s=sendarg, r=recv: c.Allreduce(s, r, op=op), recv, send)
        elif algo == "nccl":
            nccl = nccl_peer(cupy)
            code = dtypes.code_of_numpy(dtype)
            if nccl is None or code not in nccl.types:
                continue
            nccl_args = (recv.size, nccl.types[code], nccl.ops[dtypes.op_code(op)])
            sp = recv.data.ptr if inplace else send.data.ptr
            out[algo] = (lambda s=sp, r=recv: nccl.comm.allReduce(
                s, r.data.ptr, *nccl_args, cupy.cuda.get_current_stream().ptr), recv, send)
        elif algo == "mpi":
            hs = cupy.asnumpy(send)
            hr = hs if inplace else np.empty_like(hs)
            out[algo] = (lambda s=(MPI.IN_PLACE if inplace else hs), r=hr: comm.Allreduce(s, r, op=op), hr, hs)
    return out


COMMS = {}
_NCCL = {}


def communicator(algo, dependent_launch=None):
    """The run's hpcolls communicator over COMM_WORLD for `algo`, made on first use; with
    dependent_launch True/False, one of its own made with HPCOLLS_DEPENDENT_LAUNCH set so."""
    import hpcolls
    key = algo if dependent_launch is None else f"{algo}-dependent-launch-{int(dependent_launch)}"
    if key not in COMMS:
        saved = os.environ.get("HPCOLLS_DEPENDENT_LAUNCH")
        if dependent_launch is not None:
            os.environ["HPCOLLS_DEPENDENT_LAUNCH"] = str(int(dependent_launch))
        try:
            COMMS[key] = hpcolls.Communicator(MPI.COMM_WORLD, algo=algo)
        finally:
            if saved is None:
                os.environ.pop("HPCOLLS_DEPENDENT_LAUNCH", None)
            else:
                os.environ["HPCOLLS_DEPENDENT_LAUNCH"] = saved
    return COMMS[key]


def nccl_peer(cupy):
    """The NCCL peer (hpcolls' own NcclPath over COMM_WORLD, called directly in the timing
    loop), or None where NCCL cannot run (not installed, or ranks sharing a GPU)."""
    if "path" not in _NCCL:
        from ._native import device_info
        from .routes.nccl import NcclPath
        _NCCL["path"] = NcclPath(MPI.COMM_WORLD, device_info(cupy.cuda.Device().id)["uuid"])
    path = _NCCL["path"]
    return path if path.comm is not None else None


def count_wrong(fn, result, send, want, cupy, inplace, count, dtype, rank):
    if inplace:  # restore the input the timing loop overwrote
        src = make_data(np, count, dtype, rank)
        if cupy is not None and isinstance(send, cupy.ndarray):
            send[...] = cupy.asarray(src)
        else:
            send[...] = src
    elif cupy is not None and isinstance(result, cupy.ndarray):
        result.fill(0)
    else:
        result[...] = 0
    fn()
    got = cupy.asnumpy(result) if cupy is not None and isinstance(result, cupy.ndarray) else result
    return int(np.count_nonzero(got != want))


BARE_LAUNCH = "bare launch: one Python call of hpcolls._native_diag.launch_noop"
HPCOLLS_CALL = "hpcolls one-shot Allreduce, 1 x float64"
NCCL_CALL = "cupy NCCL allReduce, 1 x float64"
ARGS_LAUNCH = "empty kernel with the AllReduce kernels' parameters (a launch's share of the overhead)"
ARGS_LAUNCH_EX = "the same by cudaLaunchKernelEx, as the AllReduce kernels are launched"


def launch_probes():
    """hpcolls._native_diag (its empty-kernel launch probes: the baselines), or None with a note
    printed once where the native module was built without HPCOLLS_DIAGNOSTICS=1."""
    global _probes_note
    try:
        from . import _native_diag
        return _native_diag
    except ImportError as exc:
        if not _probes_note and MPI.COMM_WORLD.rank == 0:
            print(f"# empty-kernel baselines not measured: they need the diagnostic build "
                  f"(HPCOLLS_DIAGNOSTICS=1 at install; {exc})")
        _probes_note = True
        return None


_probes_note = False


def host_overhead(args, cupy):
    """Host µs per call, medians over --reps rounds of 2000 calls per row: the bare-launch baseline
    (an empty kernel launched by one Python->native call); hpcolls' Allreduce (the communicator's
    native entry, fast_entry.cpp), with cupy's current stream and with an explicit stream=;
    the full Python method that entry hands other calls to; its native call alone (integers in,
    no buffer resolution) on the current stream, on a stream of the caller's own (the ordering
    event's cost) and alternating two (a stream wait per call too); a native method that makes no
    CUDA call (the pybind11 floor); cupy's NCCL call and a cupy elementwise kernel for reference;
    and an empty kernel with the AllReduce kernels' parameters (~330 bytes: the peers' scratch
    pointers), by <<<>>> and by cudaLaunchKernelEx. Derived: hpcolls above the bare launch
    (docs/ARCHITECTURE.md's budget, "Targets and floors": 0.7 us), above that parameter-sized
    launch (what hpcolls' own code costs), cudaLaunchKernelEx above <<<>>>, and hpcolls / NCCL. The empty kernels and what is
    derived from them need the diagnostic build (launch_probes)."""
    probes = launch_probes()
    comm = MPI.COMM_WORLD
    x = cupy.zeros(1, dtype=cupy.float64)
    elementwise = cupy.ElementwiseKernel("", "float64 y", "y = y;", "hpcolls_bench_noop")
    c = communicator("oneshot")
    c.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)  # opens the native path
    if "Allreduce" not in vars(c):
        print("# note: the native Allreduce entry is not installed (HPCOLLS_VALIDATE or HPCOLLS_LOG>=2): "
              f"the '{HPCOLLS_CALL}' row times the Python method")
    stream = cupy.cuda.get_current_stream().ptr
    native_args = (x.data.ptr, x.data.ptr, 1, dtypes.F64, dtypes.SUM, stream)
    user_stream, other_stream = cupy.cuda.Stream(non_blocking=True), cupy.cuda.Stream(non_blocking=True)
    alternating = itertools.cycle((user_stream.ptr, other_stream.ptr))
    rows = {HPCOLLS_CALL: lambda: c.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM),
            "the same with stream= a cupy Stream of the caller's (also read natively)":
                lambda: c.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM, stream=user_stream),
            "hpcolls Allreduce, full Python method (calls the native entry hands on)":
                lambda: type(c).Allreduce(c, MPI.IN_PLACE, x, op=MPI.SUM),
            "hpcolls native call alone (integer arguments)": lambda: c._native.allreduce(*native_args),
            "the same on a non-blocking stream of the caller's (orders calls by an event)":
                lambda: c._native.allreduce(*native_args[:-1], user_stream.ptr),
            "the same alternating two streams of the caller's (each call also waits for the last)":
                lambda: c._native.allreduce(*native_args[:-1], next(alternating)),
            "pybind11 floor: native method, no CUDA call (select)": lambda: c._native.select(8),
            "cupy ElementwiseKernel launch": lambda: elementwise(x)}
    if probes is not None:
        rows[BARE_LAUNCH] = lambda: probes.launch_noop(stream)
        rows[ARGS_LAUNCH] = lambda: probes.launch_noop_with_allreduce_args(stream, False)
        rows[ARGS_LAUNCH_EX] = lambda: probes.launch_noop_with_allreduce_args(stream, True)
    nccl = nccl_peer(cupy)
    if nccl is not None:
        rows[NCCL_CALL] = lambda: nccl.comm.allReduce(
            x.data.ptr, x.data.ptr, 1, nccl.types[dtypes.F64], nccl.ops[dtypes.SUM],
            cupy.cuda.get_current_stream().ptr)
    # The rows take turns within every repetition, so that a drift of this machine's launch cost
    # (±1 µs from minute to minute here) moves them together; the difference to the bare launch
    # is the median of the per-repetition differences.
    n = 2000
    times = {name: [] for name in rows}
    for _ in range(args.warmup + args.reps):
        for name, fn in rows.items():
            cupy.cuda.get_current_stream().synchronize()
            user_stream.synchronize()
            other_stream.synchronize()
            comm.Barrier()
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            times[name].append((time.perf_counter() - t0) * 1e6 / n)
    cupy.cuda.get_current_stream().synchronize()
    times = {name: t[args.warmup:] for name, t in times.items()}
    result = {name: statistics.median(t) for name, t in times.items()}
    if probes is not None:
        result["hpcolls above the bare launch"] = statistics.median(
            a - b for a, b in zip(times[HPCOLLS_CALL], times[BARE_LAUNCH]))
        result["hpcolls above the empty kernel with its parameters"] = statistics.median(
            a - b for a, b in zip(times[HPCOLLS_CALL], times[ARGS_LAUNCH]))
        result["cudaLaunchKernelEx above <<<>>> (the empty kernel with parameters)"] = statistics.median(
            a - b for a, b in zip(times[ARGS_LAUNCH_EX], times[ARGS_LAUNCH]))
    if NCCL_CALL in result:
        result["hpcolls / NCCL (ratio)"] = result[HPCOLLS_CALL] / result[NCCL_CALL]
    return result


def graph_device_time(args, cupy, count, dependent_launch=None, measure=None):
    """Device µs per one-shot call of `count` float64, from a CUDA graph of many calls; with
    dependent_launch True/False, on a communicator of its own made with HPCOLLS_DEPENDENT_LAUNCH
    set so (the --dependent-launch-ab rows), else on the environment's settings. `measure(stream,
    call)` times the graph: by default replays timed with events (_graph_replay_us)."""
    c = communicator("oneshot", dependent_launch)
    x = cupy.ones(count)
    measure = measure or _replay_timer(args, cupy)
    with cupy.cuda.Stream(non_blocking=True) as s:
        c.Allreduce(MPI.IN_PLACE, x, op=MPI.MAX, stream=s)  # opens the native path outside capture
        s.synchronize()
        return measure(s, lambda: c.Allreduce(MPI.IN_PLACE, x, op=MPI.MAX, stream=s))


def graph_noop_time(args, cupy, measure=None, dependent_launch=False):
    """Device µs per empty kernel from a CUDA graph of as many: a kernel's floor in a graph. With
    dependent_launch, the kernels wait for the one before and let the next start early, as the
    AllReduce kernels do by default; None where the device has no dependent launch, or without
    the diagnostic build (launch_probes)."""
    probes = launch_probes()
    if probes is None:
        return None
    measure = measure or _replay_timer(args, cupy)
    with cupy.cuda.Stream(non_blocking=True) as s:
        if not dependent_launch:
            return measure(s, lambda: probes.launch_noop(s.ptr))
        if not probes.launch_noop_dependent(s.ptr):  # outside capture: is there dependent launch?
            return None
        return measure(s, lambda: probes.launch_noop_dependent(s.ptr))


def traced_kernel_times(args, cupy):
    """The kernels' own device time (CUPTI, kernel_trace.py) in graphs as above, with dependent
    launch off: per rank, the median µs of a one-shot kernel of 8 B and of 1 KiB and of the empty
    kernel, and the median gap from a kernel's end to the next one's start; {} with the reason
    printed where no rank can trace."""
    from . import kernel_trace
    comm = MPI.COMM_WORLD
    ok, why = kernel_trace.available(comm)
    if not ok:
        if comm.rank == 0:
            print(f"# kernel device time (CUPTI) not measured: {why}")
        return {}

    def traced(name):
        return lambda s, call: kernel_trace.graph_kernel_times(
            s, call, args.graph_calls, args.warmup, args.reps, name, comm)

    try:
        # Dependent launch off: a kernel launched early would count its wait for the one before.
        oneshot = traced("allreduce_oneshot")
        found = {"oneshot_8B": graph_device_time(args, cupy, 1, dependent_launch=False, measure=oneshot),
                 "oneshot_1KiB": graph_device_time(args, cupy, 128, dependent_launch=False, measure=oneshot)}
        if launch_probes() is not None:
            found["empty_kernel"] = graph_noop_time(args, cupy, measure=traced("noop"))
    except RuntimeError as exc:  # raised on every rank alike (kernel_trace._agree)
        if comm.rank == 0:
            print(f"# kernel device time (CUPTI) not measured: {exc}")
        return {}
    out = {}
    for what, (kernel_us, gap_us) in found.items():
        out[f"{what}_kernel_us_cupti_by_rank"] = comm.allgather(kernel_us)
        out[f"{what}_gap_us_cupti_by_rank"] = comm.allgather(gap_us)
    return out


def _replay_timer(args, cupy):
    """The default `measure(stream, call)` of the graph timings: replays timed with events."""
    return lambda s, call: _graph_replay_us(args, cupy, s, call)


def _graph_replay_us(args, cupy, s, call):
    """Median device µs per captured call over replays of a graph of --graph-calls calls."""
    return statistics.median(_replay_samples(args, cupy, s, _capture(args, s, call)))


def _capture(args, s, call):
    """A CUDA graph of --graph-calls calls of `call` made on stream `s`. If a call raises, the
    capture is ended (its graph dropped) and the exception goes on."""
    s.begin_capture()
    try:
        for _ in range(args.graph_calls):
            call()
    finally:
        g = s.end_capture()
    return g


def _replay_samples(args, cupy, s, g):
    """Device µs per captured call of each of --reps replays of graph `g` on stream `s`, after
    --warmup untimed ones; the ranks start each replay together."""
    comm = MPI.COMM_WORLD
    times = []
    for rep in range(args.warmup + args.reps):
        comm.Barrier()
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record(s)
        g.launch(s)
        b.record(s)
        b.synchronize()
        if rep >= args.warmup:
            times.append(cupy.cuda.get_elapsed_time(a, b) * 1e3 / args.graph_calls)
    return times


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    comm = MPI.COMM_WORLD
    import hpcolls
    cupy = None
    if hpcolls.gpu_available():
        try:
            import cupy
            from .binding import select_device
            select_device(comm)
        except ImportError:
            cupy = None
    dtype = np.dtype(args.dtype)
    rows = []
    timer = Timer(cupy)
    head = f"{'size(B)':>10} {'count':>10} {'type':>8} {'op':>4} {'algo':>8} {'place':>5} {'timing':>6} {'median us':>10} " \
           f"{'min us':>9} {'max us':>9} {'algbw GB/s':>10} {'busbw GB/s':>10} {'#wrong':>6}"
    if comm.rank == 0:
        where = f"{comm.size} ranks, {hpcolls.device_count()} GPU(s) visible" if cupy is not None else \
            f"{comm.size} ranks, CPU only (host buffers, MPI)"
        how = f"graph of {args.graph_calls} calls x reps {args.reps}" if args.graph and cupy is not None else \
            f"iters {args.iters} x reps {args.reps}"
        print(f"# hpcolls.bench AllReduce: {where}; {how} (warm-up {args.warmup})")
        print(head)
    for count in sizes(args, dtype.itemsize):
        want = expected(count, dtype, args.op, comm.size)
        for inplace in ((False,) if args.no_inplace else (False, True)):
            if cupy is not None:
                callers = gpu_callers(args, cupy, count, dtype, inplace)
            else:
                hs = make_data(np, count, dtype, comm.rank)
                hr = hs if inplace else np.empty_like(hs)
                callers = {"mpi": (lambda s=(MPI.IN_PLACE if inplace else hs), r=hr:
                                   comm.Allreduce(s, r, op=MPI_OPS[args.op]), hr, hs)}
            for algo, (fn, result, send) in callers.items():
                graphed = graph_timed(args, cupy, fn) if args.graph and cupy is not None and algo != "mpi" else None
                if graphed is None:
                    timing, (med, lo, hi), check = "eager", timer(fn, args), fn
                else:
                    (med, lo, hi), replay = graphed
                    # Out of place, the graph's own result is checked; in place its calls compound,
                    # so one eager call is checked instead.
                    timing, check = "graph", fn if inplace else replay
                wrong = count_wrong(check, result, send, want, cupy, inplace, count, dtype, comm.rank)
                wrong = comm.allreduce(wrong)
                nbytes = count * dtype.itemsize
                algbw = nbytes / med / 1e3
                busbw = algbw * 2 * (comm.size - 1) / comm.size
                row = dict(bytes=nbytes, count=count, dtype=dtype.name, op=args.op, algo=algo,
                           inplace=inplace, timing=timing, median_us=med, min_us=lo, max_us=hi, algbw_GBs=algbw,
                           busbw_GBs=busbw, wrong=wrong, ranks=comm.size)
                rows.append(row)
                if comm.rank == 0:
                    print(f"{nbytes:>10} {count:>10} {dtype.name:>8} {args.op:>4} {algo:>8} "
                          f"{'in' if inplace else 'out':>5} {timing:>6} {med:>10.2f} {lo:>9.2f} {hi:>9.2f} "
                          f"{algbw:>10.3f} {busbw:>10.3f} {wrong:>6}", flush=True)
    extra = {}
    if cupy is not None:
        extra["host_us_per_call"] = host_overhead(args, cupy)
        extra["oneshot_device_us_per_call_8B_graph"] = graph_device_time(args, cupy, 1)
        extra["oneshot_device_us_per_call_1KiB_graph"] = graph_device_time(args, cupy, 128)
        if args.dependent_launch_ab:
            for on in (False, True):
                for count, size in ((1, "8B"), (128, "1KiB")):
                    extra[f"oneshot_device_us_per_call_{size}_graph_dependent_launch_{int(on)}"] = \
                        graph_device_time(args, cupy, count, on)
        extra["empty_kernel_device_us_graph"] = graph_noop_time(args, cupy)
        extra["empty_kernel_device_us_graph_dependent_launch"] = graph_noop_time(args, cupy, dependent_launch=True)
        if not args.no_kernel_trace:
            extra.update(traced_kernel_times(args, cupy))
        if comm.rank == 0:
            for k, v in extra["host_us_per_call"].items():
                print(f"# host time per call: {k}: {v:.2f}{'' if 'ratio' in k else ' us'}")
            empty = extra["empty_kernel_device_us_graph"]
            print(f"# one-shot device time per call (CUDA graph of {args.graph_calls}): "
                  f"8 B {extra['oneshot_device_us_per_call_8B_graph']:.2f} us, "
                  f"1 KiB {extra['oneshot_device_us_per_call_1KiB_graph']:.2f} us"
                  + (f"; an empty kernel in the same kind of graph {empty:.2f} us" if empty is not None else ""))
            if extra["empty_kernel_device_us_graph_dependent_launch"] is not None:
                print(f"# an empty kernel with dependent launch (waits for the one before, lets the next start) "
                      f"in such a graph: {extra['empty_kernel_device_us_graph_dependent_launch']:.2f} us")
            for what in ("oneshot_8B", "oneshot_1KiB", "empty_kernel"):
                if f"{what}_kernel_us_cupti_by_rank" in extra:
                    kern, gap = extra[f"{what}_kernel_us_cupti_by_rank"], extra[f"{what}_gap_us_cupti_by_rank"]
                    print(f"# kernel device time (CUPTI, such graphs, dependent launch off), {what.replace('_', ' ')}: median "
                          f"{statistics.median(kern):.2f} us over ranks (max {max(kern):.2f}), then "
                          f"{statistics.median(gap):.2f} us to the next kernel's start")
            for on in ((False, True) if args.dependent_launch_ab else ()):
                print(f"# the same with HPCOLLS_DEPENDENT_LAUNCH={int(on)}: "
                      f"8 B {extra[f'oneshot_device_us_per_call_8B_graph_dependent_launch_{int(on)}']:.2f} us, "
                      f"1 KiB {extra[f'oneshot_device_us_per_call_1KiB_graph_dependent_launch_{int(on)}']:.2f} us")
    total_wrong = sum(r["wrong"] for r in rows)
    if comm.rank == 0:
        print(f"# total wrong elements: {total_wrong}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"rows": rows, **extra, "argv": sys.argv, "ranks": comm.size}, f, indent=1)
    for c in COMMS.values():
        c.close()
    COMMS.clear()  # a later main() in this process makes its own
    if _NCCL.get("path") is not None:
        _NCCL["path"].destroy()
    _NCCL.clear()
    return 1 if total_wrong else 0


if __name__ == "__main__":
    sys.exit(main())
