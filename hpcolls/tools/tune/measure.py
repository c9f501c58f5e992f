"""The device time of each candidate of a collective at each size, by the benchmark's own machinery
(hpcolls/tools/bench/: its cases, its communicators with settings of their own, its NCCL caller
and its CUDA-graph replay): every protocol, and for Allreduce one-shot and two-shot, forced on a
communicator of its own, and NCCL where every rank has its own GPU. A candidate the plan does not
run on its protocol at some size (no kernel of that protocol for the collective, its region too
small, LL128 without its probe) has no time there. Collective: every rank measures the same
candidates in the same order; the times are the slowest rank's (timing.graph_timed), so every
rank holds the same numbers.
"""
from types import SimpleNamespace

import numpy as np
from mpi4py import MPI

from ..bench import cases, runners, timing
from .crossovers import NCCL, ONESHOT, TWOSHOT

DTYPE = np.dtype(np.float64)  # float64 SUM, as docs/PERFORMANCE.md measures the protocols
PROTOCOLS = {"ll": "LL", "sentinel": "sentinel", "ll128": "LL128"}  # HPCOLLS_PROTOCOL -> the plan's name
ALGOS = {ONESHOT: "oneshot", TWOSHOT: "twoshot"}
# A graph holds about this much traffic per rank at most (fewer calls of large messages): the
# replay of a 64 MiB call takes milliseconds, of an 8-byte one about a microsecond.
GRAPH_BYTES = 8 << 20


def candidates(coll):
    """(protocol, algo) of every native candidate of `coll` (algo None: the collective has one
    kernel per protocol, forced one-shot so that no NCCL limit applies), and NCCL."""
    algos = (ONESHOT, TWOSHOT) if coll == "allreduce" else (None,)
    return [(p, a) for p in PROTOCOLS.values() for a in algos] + [(NCCL, None)]


def forced_communicator(protocol, algo):
    """The bench's communicator over COMM_WORLD with `protocol` and `algo` forced (made once). An
    algorithm other than auto keeps NCCL out of the route, so the native path takes every size,
    whole or in pieces; no tuned table is read (this run measures the kernels themselves)."""
    setting = next(k for k, v in PROTOCOLS.items() if v == protocol)
    return runners.communicator(ALGOS.get(algo, "oneshot"),
                                env={"HPCOLLS_PROTOCOL": setting, "HPCOLLS_TUNE_FILE": "none"})


def caller(cupy, coll, candidate, case):
    """A call of `coll` on `case`'s buffers through `candidate`, or None where it does not run as
    that candidate (the route's reason names the plan's protocol: routes/native.py)."""
    protocol, algo = candidate
    if protocol == NCCL:
        found = runners.caller(cupy, "nccl", coll, case)
        return None if found is None else found[0]
    fn, route, why = runners.hpcolls_caller(forced_communicator(protocol, algo), cases.METHOD[coll], case)
    return fn if route in ("native", "pieces") and f"{protocol} protocol" in why else None


def graph_args(args, nbytes):
    """The bench's timing arguments for messages of `nbytes`: fewer calls per graph as they grow."""
    calls = max(2, min(args.graph_calls, GRAPH_BYTES // max(nbytes, 1)))
    return SimpleNamespace(graph_calls=calls, reps=args.reps, warmup=args.warmup)


def measure_size(args, cupy, coll, nbytes, wanted):
    """{candidate: median device µs or None} of `coll` at `nbytes` (the plan's bytes: a rank's
    block for Allgather and Reduce_scatter) for each of `wanted`."""
    comm = MPI.COMM_WORLD
    block = nbytes // DTYPE.itemsize
    case = cases.case(cupy, coll, block, DTYPE, False, comm.rank, comm.size, 0, "sum")
    times = {}
    for candidate in wanted:
        fn = caller(cupy, coll, candidate, case)
        ran = comm.allreduce(fn is not None, op=MPI.LAND)  # every rank reads the same plan: a guard only
        found = timing.graph_timed(graph_args(args, nbytes), cupy, fn) if ran else None
        times[candidate] = None if found is None else found[0][0]
    return times


class Budget:
    """Whether there is time left, decided on rank 0 and the same on every rank (collective)."""

    def __init__(self, seconds, clock):
        self.seconds, self.clock, self.start = seconds, clock, clock()

    def used(self):
        return self.clock() - self.start

    def left(self, reserve=0.0):
        return MPI.COMM_WORLD.bcast(self.used() + reserve < self.seconds, root=0)


def measure_collective(args, cupy, coll, sizes, budget):
    """({candidate: [µs or None per size]}, why it stopped early or None). Candidates that do not
    run at the smallest size are not tried further; with fewer than two, there is nothing to
    choose and nothing is measured."""
    wanted = candidates(coll)
    first = measure_size(args, cupy, coll, sizes[0], wanted)
    wanted = [c for c in wanted if first[c] is not None]
    times = {c: [first[c]] for c in wanted}
    if len(wanted) < 2:
        return {}, f"only {', '.join(map(str, wanted)) or 'no candidate'} runs here: nothing to choose"
    for nbytes in sizes[1:]:
        if not budget.left():
            return times, f"out of time at {nbytes} B ({budget.used():.0f} s of {budget.seconds:.0f})"
        found = measure_size(args, cupy, coll, nbytes, wanted)
        for c in wanted:
            times[c].append(found[c])
    return times, None
