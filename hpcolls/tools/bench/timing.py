"""How the benchmark times a call: host time of back-to-back calls, and device time from the
replays of a CUDA graph of many calls. Every figure is taken at the slowest rank of each
repetition (a collective is as slow as its slowest rank), then median, min and max over the
repetitions."""
import statistics
import time

import numpy as np
from mpi4py import MPI

from ...errors import GraphCaptureError


def slowest_rank_summary(samples):
    """(median, min, max) over repetitions of per-call µs, each repetition taken at its slowest
    rank: a collective call is as slow as its slowest rank."""
    samples = np.array(samples, dtype=np.float64)
    MPI.COMM_WORLD.Allreduce(MPI.IN_PLACE, samples, op=MPI.MAX)
    return float(np.median(samples)), float(samples.min()), float(samples.max())


def host_timed(args, fn, synchronize=None):
    """(median, min, max) host µs per call of --iters back-to-back calls of fn(), over --reps
    repetitions after --warmup; the ranks start each repetition together. `synchronize()` (the
    device, for calls that only enqueue work) runs after each repetition, outside the time: what
    is timed is what a call costs the program's thread."""
    comm = MPI.COMM_WORLD
    samples = []
    for rep in range(args.warmup + args.reps):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            fn()
        t = (time.perf_counter() - t0) * 1e6 / args.iters
        if synchronize is not None:
            synchronize()
        if rep >= args.warmup:
            samples.append(t)
    return slowest_rank_summary(samples)


def graph_timed(args, cupy, fn):
    """((median, min, max) device µs per call, replay) for `fn` captured --graph-calls times into a
    CUDA graph on a stream of its own (cupy's current stream while capturing, which every caller
    uses) and replayed; replay() runs the graph once more and waits for it. None when the call
    cannot be captured: a call through MPI raises GraphCaptureError before it enqueues anything,
    and every rank takes the same route for the same call, so every rank refuses."""
    comm = MPI.COMM_WORLD
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        fn()  # any set-up (peer memory, an NCCL communicator) happens here, outside the capture
        s.synchronize()
        try:
            g = capture(args, s, fn)
        except GraphCaptureError:
            g = None
    refused = comm.allgather(g is None)
    if any(refused) != all(refused):
        raise RuntimeError(f"hpcolls.bench: ranks {[r for r, no in enumerate(refused) if no]} could not capture "
                           "a call that the others captured: the ranks took different routes for one call")
    if g is None:
        return None

    def replay():
        cupy.cuda.get_current_stream().synchronize()  # what the caller did on its stream comes first
        g.launch(s)
        s.synchronize()
    return slowest_rank_summary(replay_samples(args, cupy, s, g)), replay


def replay_timer(args, cupy):
    """`measure(stream, call)`: the median device µs per captured call over replays of a graph
    of --graph-calls calls (the floors' default measure)."""
    return lambda s, call: statistics.median(replay_samples(args, cupy, s, capture(args, s, call)))


def capture(args, s, call):
    """A CUDA graph of --graph-calls calls of `call` made on stream `s`. If a call raises, the
    capture is ended (its graph dropped) and the exception goes on."""
    s.begin_capture()
    try:
        for _ in range(args.graph_calls):
            call()
    finally:
        g = s.end_capture()
    return g


def replay_samples(args, cupy, s, g):
    """Device µs per captured call of each of --reps replays of graph `g` on stream `s`, after
    --warmup untimed ones; the ranks start each replay together."""
    return event_samples(args, cupy, s, lambda: g.launch(s), args.graph_calls)


def event_samples(args, cupy, s, launch, calls=1):
    """Device µs per call of each of --reps runs of `launch()` (which enqueues `calls` calls on
    stream `s`), timed by events around it, after --warmup untimed ones; the ranks start each run
    together."""
    comm = MPI.COMM_WORLD
    times = []
    for rep in range(args.warmup + args.reps):
        comm.Barrier()
        a, b = cupy.cuda.Event(), cupy.cuda.Event()
        a.record(s)
        launch()
        b.record(s)
        b.synchronize()
        if rep >= args.warmup:
            times.append(cupy.cuda.get_elapsed_time(a, b) * 1e3 / calls)
    return times
