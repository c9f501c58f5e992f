"""Host-buffer overhead benchmark: what hpcolls.wrap adds to a call on host buffers.

    python -m hpcolls.tools.host_overhead [--calls N] [--rounds R] [--methods NAME,...]
    mpiexec -n 3 python -m hpcolls.tools.host_overhead

For each buffer method of mpi4py's communicator classes (Comm, Intracomm, Topocomm: the names of
hpcolls.methods' table), the µs per call on plain mpi4py (MPI.COMM_WORLD; for the neighborhood
collectives a periodic ring made from it with Create_cart) and through hpcolls.wrap of the same
communicator, with numpy buffers of one float64 per rank. Blocking calls alone; nonblocking ones
with their Wait; persistent ones with Start, Wait and Free. A point-to-point call's partner (the
receive a send goes to, the send a receive takes) runs on plain mpi4py in both, so the
difference is the one call's.

Plain and wrapped alternate, R rounds of N calls each, the order flipping every round so that a
change in the machine's load falls on both alike, after N untimed calls of each; a round's time
is its slowest rank's. Printed, as a Markdown table: per method the median over rounds of the µs
per call of each, and the median over rounds of their difference (hpcolls - mpi4py), the
wrapper's cost. The header says the load average before and after.

It uses hpcolls.wrap alone, so it also runs as a file against another tree's hpcolls
(`PYTHONPATH=OTHER python path/to/host_overhead.py`) to compare two trees.
"""
import argparse
import os
import statistics
import time

import mpi4py
import numpy as np
from mpi4py import MPI

import hpcolls  # absolute: runnable as a file against another tree
from hpcolls import settings

TAG = 7


def collective_arguments(n):
    """{blocking collective: its arguments} at n ranks, one float64 per rank (two neighbors on
    the ring for the neighborhood collectives); vector forms with counts (and byte
    displacements and types for the w forms)."""
    x, y, sn, gn = np.ones(1), np.empty(1), np.ones(n), np.empty(n)
    ones, two = [1] * n, [1, 1]
    w = (([1] * n, [8 * i for i in range(n)]), [MPI.DOUBLE] * n)
    w2 = (([1, 1], [0, 8]), [MPI.DOUBLE] * 2)
    s2, g2 = np.ones(2), np.empty(2)
    return {
        "Bcast": (x, 0), "Gather": (x, gn, 0), "Gatherv": (x, [gn, ones], 0), "Scatter": (sn, y, 0),
        "Scatterv": ([sn, ones], y, 0), "Allgather": (x, gn), "Allgatherv": (x, [gn, ones]),
        "Alltoall": (sn, gn), "Alltoallv": ([sn, ones], [gn, ones]), "Alltoallw": ([sn, *w], [gn, *w]),
        "Allreduce": (x, y), "Reduce": (x, y), "Reduce_scatter_block": (sn, y), "Reduce_scatter": (sn, y, ones),
        "Scan": (x, y), "Exscan": (x, y),
        "Neighbor_allgather": (x, g2), "Neighbor_allgatherv": (x, [g2, two]), "Neighbor_alltoall": (s2, g2),
        "Neighbor_alltoallv": ([s2, two], [g2, two]), "Neighbor_alltoallw": ([s2, *w2], [g2, *w2]),
    }


def _complete(name, completion):
    """The step of a call that returns None, a Request or a persistent request, as `name` does."""
    if completion == "nonblocking":
        return lambda c, *args: getattr(c, name)(*args).Wait()

    def persistent(c, *args):
        request = getattr(c, name)(*args)
        request.Start()
        request.Wait()
        request.Free()
    return persistent if completion == "persistent" else (lambda c, *args: getattr(c, name)(*args))


def _forms(blocking):
    """{method name: completion} of a blocking call's forms: itself, I..., ..._init."""
    return {blocking: "blocking", "I" + blocking[0].lower() + blocking[1:]: "nonblocking",
            blocking + "_init": "persistent"}


def collective_steps(n):
    """{method: (step(comm), on the ring)} for every collective form."""
    steps = {}
    for blocking, args in collective_arguments(n).items():
        for name, completion in _forms(blocking).items():
            call = _complete(name, completion)
            steps[name] = ((lambda c, call=call, args=args: call(c, *args)), blocking.startswith("Neighbor"))
    return steps


def point_to_point_steps(plain, rank, n):
    """{method: (step(comm), False)} for every point-to-point form, between each rank and its
    neighbors on the ring (itself at one rank); the partner on `plain`."""
    right, left = (rank + 1) % n, (rank - 1) % n
    x, y, z = np.ones(1), np.empty(1), np.ones(1)
    steps = {}

    def add(forms, step):
        for name, completion in forms.items():
            steps[name] = ((lambda c, call=_complete(name, completion): step(c, call)), False)

    def sending(ready):
        def step(c, call):  # the receive is posted first: Ssend and Rsend need it
            posted = plain.Irecv(y, left, TAG)
            if ready:
                plain.Barrier()  # every receive posted before any ready send
            call(c, x, right, TAG)
            posted.Wait()
        return step

    def receiving(c, call):
        sent = plain.Isend(x, right, TAG)
        call(c, y, left, TAG)
        sent.Wait()

    for name in ("Send", "Bsend", "Ssend", "Rsend"):
        add(_forms(name), sending(name == "Rsend"))
    add(_forms("Recv"), receiving)
    add(_forms("Sendrecv"), lambda c, call: call(c, x, right, TAG, y, left, TAG))
    add(_forms("Sendrecv_replace"), lambda c, call: call(c, z, right, TAG, left, TAG))

    def partitioned(send_on, recv_on):
        def step(c):
            s = (send_on or c).Psend_init(x, 1, right, TAG)
            r = (recv_on or c).Precv_init(y, 1, left, TAG)
            MPI.Prequest.Startall([s, r])
            s.Pready(0)
            MPI.Request.Waitall([s, r])
            s.Free()
            r.Free()
        return step
    steps["Psend_init"] = (partitioned(None, plain), False)
    steps["Precv_init"] = (partitioned(plain, None), False)
    return steps


def all_steps(plain, rank, n):
    """{method: (step(comm), on the ring)} for every buffer method this mpi4py has (the forms
    MPI lacks, such as Sendrecv_init, left out)."""
    steps = {**collective_steps(n), **point_to_point_steps(plain, rank, n)}
    owners = (MPI.Comm, MPI.Intracomm, MPI.Topocomm)
    return {name: s for name, s in steps.items() if any(name in vars(owner) for owner in owners)}


def time_pair(step, comms, calls, rounds, barrier):
    """([plain s per call per round], [wrapped ...]) on this rank: interleaved, order flipped each round."""
    per_call = ([], [])
    for which in (0, 1):  # warm-up: connections, the wrapper's first reading of its settings
        for _ in range(calls):
            step(comms[which])
    for r in range(rounds):
        for which in ((0, 1) if r % 2 == 0 else (1, 0)):
            comm = comms[which]
            barrier()
            start = time.perf_counter()
            for _ in range(calls):
                step(comm)
            per_call[which].append((time.perf_counter() - start) / calls)
    return per_call


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m hpcolls.tools.host_overhead", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=2000, help="calls per round (default 2000)")
    p.add_argument("--rounds", type=int, default=21, help="rounds of each (default 21)")
    p.add_argument("--methods", default="", help="comma-separated method names (default: every one)")
    args = p.parse_args(argv)
    if args.calls < 1 or args.rounds < 1:
        p.error("--calls and --rounds must be positive")
    return args


def main(argv=None):
    args = parse_args(argv)
    world = MPI.COMM_WORLD
    rank, n = world.Get_rank(), world.Get_size()
    steps = all_steps(world, rank, n)
    chosen = [m for m in args.methods.split(",") if m] or list(steps)
    unknown = sorted(set(chosen) - set(steps))
    if unknown:
        raise SystemExit(f"host_overhead: no such buffer method here: {', '.join(unknown)} (known: {', '.join(steps)})")
    comms = {False: (world, hpcolls.wrap(world))}
    if any(steps[name][1] for name in chosen):
        ring = world.Create_cart([n], periods=[True])
        comms[True] = (ring, hpcolls.wrap(ring))
    MPI.Attach_buffer(bytearray(1 << 16))  # for Bsend
    load_before = os.getloadavg()
    rows = []
    for name in chosen:
        step, on_ring = steps[name]
        mine = time_pair(step, comms[on_ring], args.calls, args.rounds, world.Barrier)
        every = world.gather(mine, root=0)
        if rank == 0:  # a round takes as long as its slowest rank
            plain, wrapped = ([max(r[which][i] for r in every) * 1e6 for i in range(args.rounds)] for which in (0, 1))
            rows.append((name, statistics.median(plain), statistics.median(wrapped),
                         statistics.median(w - p for p, w in zip(plain, wrapped))))
    MPI.Detach_buffer()
    load_after = os.getloadavg()
    if rank == 0:
        given = " ".join(f"{s.name}={os.environ[s.name]}" for s in settings.SETTINGS if settings.is_set(s.name))
        library = MPI.Get_library_version().split(",")[0].strip(chr(0))
        print(f"# host_overhead: hpcolls {os.path.dirname(hpcolls.__file__)}, mpi4py {mpi4py.__version__}, {library}; "
              f"{n} rank(s); {args.rounds} rounds x {args.calls} calls, interleaved; numpy float64, one per rank"
              f"{'; ' + given if given else ''}")
        print(f"# load average (1 min) {load_before[0]:.2f} before, {load_after[0]:.2f} after")
        print("| method | mpi4py µs | hpcolls µs | above µs |")
        print("| --- | --- | --- | --- |")
        for name, plain, wrapped, above in rows:
            print(f"| {name} | {plain:.2f} | {wrapped:.2f} | {above:+.2f} |")
        worst = max(rows, key=lambda row: row[3])
        print(f"# largest difference: {worst[3]:+.2f} µs ({worst[0]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
