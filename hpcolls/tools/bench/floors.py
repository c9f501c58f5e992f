"""The floors the benchmark measures once per run, beside its rows: the host time of one Python
Allreduce call next to a bare kernel launch and cupy's NCCL call (the host-time budget is counted
above the bare launch: docs/ARCHITECTURE.md, "Targets and floors"), and the device time of one
small one-shot call from a CUDA graph beside an empty kernel's in the same kind of graph (with
--dependent-launch-ab, with programmatic dependent launch off and on), and, where torch is
installed, the kernels' own device time in such graphs as CUPTI records it."""
import itertools
import statistics
import time

from mpi4py import MPI

from ... import dtypes, native_module
from . import kernel_trace
from .runners import communicator, nccl_peer
from .timing import replay_timer

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
        return native_module.load_diagnostics()
    except native_module.NativeModuleMissing as exc:
        if not _probes_note and MPI.COMM_WORLD.rank == 0:
            print(f"# empty-kernel baselines not measured: {exc}")
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
    pointers), by <<<>>> and by cudaLaunchKernelEx; the other collectives' native entries, one
    element each. Derived: hpcolls above the bare launch (docs/ARCHITECTURE.md's budget, "Targets
    and floors": 0.7 us), each other entry above it too, above that parameter-sized launch (what
    hpcolls' own code costs), cudaLaunchKernelEx above <<<>>>, and hpcolls / NCCL. The empty
    kernels and what is derived from them need the diagnostic build (launch_probes)."""
    probes = launch_probes()
    comm = MPI.COMM_WORLD
    x = cupy.zeros(1, dtype=cupy.float64)
    elementwise = cupy.ElementwiseKernel("", "float64 y", "y = y;", "hpcolls_bench_noop")
    c = communicator("oneshot")
    c.Allreduce(MPI.IN_PLACE, x, op=MPI.SUM)  # opens the native path
    nc = c.native_comm(x.data.device_id)
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
            "hpcolls native call alone (integer arguments)": lambda: nc.allreduce(*native_args),
            "the same on a non-blocking stream of the caller's (orders calls by an event)":
                lambda: nc.allreduce(*native_args[:-1], user_stream.ptr),
            "the same alternating two streams of the caller's (each call also waits for the last)":
                lambda: nc.allreduce(*native_args[:-1], next(alternating)),
            "pybind11 floor: native method, no CUDA call (select)": lambda: nc.select(8),
            "cupy ElementwiseKernel launch": lambda: elementwise(x)}
    y, blocks, ones = cupy.zeros(1), cupy.zeros(comm.size), [1] * comm.size
    entries = {"hpcolls Bcast, 8 B": lambda: c.Bcast(x, 0),
               "hpcolls Reduce, 1 x float64": lambda: c.Reduce(x, y, MPI.SUM, 0),
               "hpcolls Allgather, 8 B per rank": lambda: c.Allgather(x, blocks),
               "hpcolls Reduce_scatter_block, 1 x float64 per rank": lambda: c.Reduce_scatter_block(blocks, y, MPI.SUM),
               "hpcolls Reduce_scatter, counts [1, ..., 1]": lambda: c.Reduce_scatter(blocks, y, ones, MPI.SUM)}
    rows.update(entries)
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
        for name in entries:
            result[f"{name} above the bare launch"] = statistics.median(
                a - b for a, b in zip(times[name], times[BARE_LAUNCH]))
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
    call)` times the graph: by default replays timed with events (timing.replay_timer)."""
    c = communicator("oneshot", dependent_launch)
    x = cupy.ones(count)
    measure = measure or replay_timer(args, cupy)
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
    measure = measure or replay_timer(args, cupy)
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




def floors(args, cupy):
    """Every floor above, as the JSON's extra keys."""
    extra = {"host_us_per_call": host_overhead(args, cupy),
             "oneshot_device_us_per_call_8B_graph": graph_device_time(args, cupy, 1),
             "oneshot_device_us_per_call_1KiB_graph": graph_device_time(args, cupy, 128)}
    if args.dependent_launch_ab:
        for on in (False, True):
            for count, size in ((1, "8B"), (128, "1KiB")):
                extra[f"oneshot_device_us_per_call_{size}_graph_dependent_launch_{int(on)}"] = \
                    graph_device_time(args, cupy, count, on)
    extra["empty_kernel_device_us_graph"] = graph_noop_time(args, cupy)
    extra["empty_kernel_device_us_graph_dependent_launch"] = graph_noop_time(args, cupy, dependent_launch=True)
    if not args.no_kernel_trace:
        extra.update(traced_kernel_times(args, cupy))
    return extra


def report(args, extra):
    """The floors as the table's closing comment lines (rank 0 prints them)."""
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
