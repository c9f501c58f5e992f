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

def namespace(plain, rank, n, make=None):
    """What the steps' source reads: the buffers (one float64 per rank; two blocks on the ring for
    the neighborhood collectives), the specs of the vector forms (counts; byte displacements and
    types for the w forms), the ring neighbors, plain mpi4py (P) for a point-to-point partner.
    `make(length, output)`: the buffer of `length` float64 (an input, or an output when `output`)
    of whatever kind and contents a caller wants (default: numpy ones and empty)."""
    make = make or (lambda length, output: np.empty(length) if output else np.ones(length))
    x, y, z, sn, gn, s2, g2 = (make(length, output) for length, output in
                               ((1, False), (1, True), (1, False), (n, False), (n, True), (2, False), (2, True)))
    ones, displs, two = [1] * n, [8 * i for i in range(n)], [1, 1]
    return {
        "MPI": MPI, "P": plain, "T": 7, "right": (rank + 1) % n, "left": (rank - 1) % n,
        "x": x, "y": y, "z": z, "sn": sn, "gn": gn, "s2": s2, "g2": g2, "ones": ones,
        "sv": [sn, ones], "gv": [gn, ones], "sw": [sn, (ones, displs), [MPI.DOUBLE] * n],
        "gw": [gn, (ones, displs), [MPI.DOUBLE] * n], "s2v": [s2, two], "g2v": [g2, two],
        "s2w": [s2, (two, [0, 8]), [MPI.DOUBLE] * 2], "g2w": [g2, (two, [0, 8]), [MPI.DOUBLE] * 2],
    }


# The arguments of each blocking collective, as source over `namespace`.
COLLECTIVES = {
    "Bcast": "x, 0", "Gather": "x, gn, 0", "Gatherv": "x, gv, 0", "Scatter": "sn, y, 0", "Scatterv": "sv, y, 0",
    "Allgather": "x, gn", "Allgatherv": "x, gv", "Alltoall": "sn, gn", "Alltoallv": "sv, gv", "Alltoallw": "sw, gw",
    "Allreduce": "x, y", "Reduce": "x, y", "Reduce_scatter_block": "sn, y", "Reduce_scatter": "sn, y, ones",
    "Scan": "x, y", "Exscan": "x, y",
    "Neighbor_allgather": "x, g2", "Neighbor_allgatherv": "x, g2v", "Neighbor_alltoall": "s2, g2",
    "Neighbor_alltoallv": "s2v, g2v", "Neighbor_alltoallw": "s2w, g2w",
}
# Point-to-point calls: (the blocking form, its arguments, the partner's lines before and after
# it on plain mpi4py). A send's receive is posted first (Ssend and Rsend need it; a ready send
# also waits until every rank has posted its own).
_SEND = ("q = P.Irecv(y, left, T)", "q.Wait()")
POINT_TO_POINT = {
    "Send": ("x, right, T", _SEND), "Bsend": ("x, right, T", _SEND), "Ssend": ("x, right, T", _SEND),
    "Rsend": ("x, right, T", ("q = P.Irecv(y, left, T); P.Barrier()", "q.Wait()")),
    "Recv": ("y, left, T", ("s = P.Isend(x, right, T)", "s.Wait()")),
    "Sendrecv": ("x, right, T, y, left, T", ("", "")), "Sendrecv_replace": ("z, right, T, left, T", ("", "")),
}
# Partitioned: (the method's arguments, the lines around it with its partner on plain mpi4py).
PARTITIONED = {
    "Psend_init": ("x, 1, right, T", "s = c.Psend_init({}); r = P.Precv_init(y, 1, left, T)"),
    "Precv_init": ("y, 1, left, T", "s = P.Psend_init(x, 1, right, T); r = c.Precv_init({})"),
}
_PARTITIONED_REST = "MPI.Prequest.Startall([s, r]); s.Pready(0); MPI.Request.Waitall([s, r]); s.Free(); r.Free()"


def _forms(blocking):
    """{method name: its call on `c` as a format string of its arguments} for a blocking call's
    forms: itself, its nonblocking form with Wait, its persistent form with Start, Wait and Free."""
    nonblocking = "I" + blocking[0].lower() + blocking[1:]
    return {blocking: f"c.{blocking}({{}})", nonblocking: f"c.{nonblocking}({{}}).Wait()",
            blocking + "_init": f"p = c.{blocking}_init({{}}); p.Start(); p.Wait(); p.Free()"}


def calls():
    """{method: (its arguments as source, the body of step(c) as a format string of them, on the
    ring)}, for every form MPI has a name for."""
    every = {}
    for blocking, arguments in COLLECTIVES.items():
        for name, call in _forms(blocking).items():
            every[name] = (arguments, call, blocking.startswith("Neighbor"))
    for blocking, (arguments, (before, after)) in POINT_TO_POINT.items():
        for name, call in _forms(blocking).items():
            every[name] = (arguments, "; ".join(line for line in (before, call, after) if line), False)
    for name, (arguments, lines) in PARTITIONED.items():
        every[name] = (arguments, f"{lines}; {_PARTITIONED_REST}", False)
    return every


def available():
    """calls() less the forms this mpi4py lacks (such as Sendrecv_init)."""
    owners = (MPI.Comm, MPI.Intracomm, MPI.Topocomm)
    return {name: call for name, call in calls().items() if any(name in vars(owner) for owner in owners)}


def compile_step(name, names, arguments=None):
    """step(c) for method `name`, over the namespace `names`, compiled from its source so that it
    calls the method as a program writes it (`c.Allreduce(x, y)`: a method call on the object,
    which Python makes without a bound method where it can). `arguments`: source in place of the
    method's own arguments."""
    own, body, _ = calls()[name]
    exec(f"def step(c):\n    {body.format(own if arguments is None else arguments)}", names)  # noqa: S102
    return names.pop("step")


def all_steps(plain, rank, n, make=None):
    """{method: (step(comm), on the ring)} for every buffer method this mpi4py has, over one
    namespace (namespace(plain, rank, n, make))."""
    names = namespace(plain, rank, n, make)
    return {name: (compile_step(name, names), on_ring) for name, (_, _, on_ring) in available().items()}


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
    rows, missing = [], []
    for name in chosen:
        step, on_ring = steps[name]
        try:
            step(comms[on_ring][0])
        except NotImplementedError:   # mpi4py has it, this MPI library not (Open MPI 4: MPI-4's calls)
            missing.append(name)
            continue
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
        if missing:
            print(f"# not in this MPI library (mpi4py raises NotImplementedError): {', '.join(missing)}")
        worst = max(rows, key=lambda row: row[3])
        print(f"# largest difference: {worst[3]:+.2f} µs ({worst[0]})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
