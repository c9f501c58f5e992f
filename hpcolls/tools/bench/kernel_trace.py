"""Kernels' own device time, as CUPTI records each kernel's start and end (read through
torch.profiler, where torch is installed): the benchmark's "kernel device time" rows.

A graph's time per call (bench.graph_device_time) is the kernel plus the gap before the next one
starts, which under MPS is most of a microsecond even for an empty kernel. The issue's device-time
target is the kernel's own time, so this records every kernel of a replayed graph and reports the
median duration and the median gap between one kernel's end and the next one's start.
"""
import statistics

from mpi4py import MPI


def available(comm=MPI.COMM_WORLD):
    """(True, "") when every rank can trace kernels, else (False, why): all ranks agree, so the
    collective calls inside a trace are made by all or none."""
    try:
        import torch.profiler  # noqa: F401  (what graph_kernel_times needs)
        why = ""
    except ImportError as exc:
        why = f"torch.profiler is not importable ({exc})"
    whys = comm.allgather(why)
    missing = [f"rank {r}: {w}" for r, w in enumerate(whys) if w]
    return (not missing, "; ".join(missing[:2]))


def graph_kernel_times(stream, call, calls, warmup, reps, name, comm=MPI.COMM_WORLD):
    """Median device µs of the kernels whose name contains `name` in a CUDA graph of `calls`
    calls of call() captured on the cupy `stream`, and the median µs from one kernel's end to the
    next one's start, over the last `reps` of warmup + reps replays (each between barriers).
    Collective: every rank gets the same outcome, a pair or RuntimeError naming what failed where,
    so no rank is left waiting in a barrier that another one skipped.

    The graph is captured inside the trace: CUPTI may not report the kernels of a graph that was
    instantiated before tracing began."""
    from torch.profiler import ProfilerActivity, profile
    prof = profile(activities=[ProfilerActivity.CUDA])
    try:
        _agree(comm, "starting the trace", prof.start)
    except RuntimeError:
        _stop_if_started(prof)  # on the ranks where it did start
        raise
    try:
        stream.begin_capture()
        for _ in range(calls):
            call()
        graph = stream.end_capture()
        for _ in range(warmup + reps):
            comm.Barrier()
            graph.launch(stream)
            stream.synchronize()
    finally:
        prof.stop()
    return _agree(comm, "reading the trace", lambda: _medians(prof, name, calls, warmup, reps))


def _stop_if_started(prof):
    try:
        prof.stop()
    except Exception:  # this rank's start was the one that failed: there is nothing to stop
        pass


def _agree(comm, what, fn):
    """fn()'s result on every rank, or RuntimeError on every rank if it raised on any."""
    try:
        result, why = fn(), ""
    except Exception as exc:  # reported on every rank below, never dropped
        result, why = None, f"{type(exc).__name__}: {exc}"
    whys = comm.allgather(why)
    failed = [f"rank {r}: {w}" for r, w in enumerate(whys) if w]
    if failed:
        raise RuntimeError(f"kernel trace, {what}: " + "; ".join(failed[:2]))
    return result


def _medians(prof, name, calls, warmup, reps):
    spans = sorted((e.start_ns(), e.start_ns() + e.duration_ns())
                   for e in prof.profiler.kineto_results.events() if name in e.name())
    if len(spans) < calls * (warmup + reps):
        raise RuntimeError(f"CUPTI reported {len(spans)} kernels named *{name}*, not "
                           f"{calls * (warmup + reps)} ({warmup + reps} replays of {calls})")
    spans = spans[-calls * reps:]
    durations, gaps = [], []
    for r in range(reps):
        replay = spans[r * calls:(r + 1) * calls]
        durations += [(end - start) / 1e3 for start, end in replay]
        gaps += [(nxt[0] - cur[1]) / 1e3 for cur, nxt in zip(replay, replay[1:])]
    return statistics.median(durations), statistics.median(gaps)
