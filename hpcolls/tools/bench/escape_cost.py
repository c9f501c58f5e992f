"""The sentinel protocol's escape, priced: device time per call of Allgather and of Allreduce
(uint64 BXOR) forced onto the sentinel protocol (HPCOLLS_PROTOCOL=sentinel), on random words
(which never hold the sentinel or the escape mark: the plain path, two compares per word at the
sender, one at the receiver) and on words all equal to the sentinel (every chunk escaped: an
extra 8-byte escape word stored and polled per chunk), per size, from CUDA graphs as the
benchmark times them (timing.py). Under mpiexec on the GPU machine:

  mpiexec -n 2 python -m hpcolls.tools.bench.escape_cost [--json PATH]
"""
import argparse
import json
import sys
from types import SimpleNamespace

import numpy as np
from mpi4py import MPI

from ...binding import select_device
from .runners import communicator, release
from .timing import graph_timed

SENTINEL = 0x5A17C3E94B2D86F1  # native/include/hpcolls/sentinel_layout.h
SIZES = (4 << 10, 64 << 10, 1 << 20, 4 << 20)


def rows(cupy, timing):
    comm = communicator("auto", env={"HPCOLLS_PROTOCOL": "sentinel"})
    world = MPI.COMM_WORLD
    out = []
    for size in SIZES:
        count = size // 8
        rng = np.random.default_rng([world.rank, size])
        for data in ("random", "sentinel"):
            words = rng.integers(0, 2**64, count, dtype=np.uint64) if data == "random" else \
                np.full(count, np.uint64(SENTINEL))
            send = cupy.asarray(words)
            gathered, reduced = cupy.empty(world.size * count, np.uint64), cupy.empty(count, np.uint64)
            for coll, call in (("allgather", lambda: comm.Allgather(send, gathered)),
                               ("allreduce", lambda: comm.Allreduce(send, reduced, op=MPI.BXOR))):
                found = graph_timed(timing, cupy, call)
                out.append(dict(coll=coll, bytes=size, data=data, device_us=found[0][0] if found else None))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m hpcolls.tools.bench.escape_cost", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--reps", type=int, default=10)
    args = p.parse_args(argv)
    import cupy
    world = MPI.COMM_WORLD
    select_device(world)
    timing = SimpleNamespace(graph_calls=100, reps=args.reps, warmup=3)
    try:
        found = rows(cupy, timing)
    finally:
        release()
    if world.rank == 0:
        print(f"# sentinel protocol, {world.size} ranks: device us per call, random words vs words all the sentinel")
        print(f"{'coll':>10} {'bytes':>9} {'random':>8} {'sentinel':>9} {'ratio':>6}")
        for r, s in _pairs(found):
            ratio = s["device_us"] / r["device_us"] if r["device_us"] and s["device_us"] else None
            print(f"{r['coll']:>10} {r['bytes']:>9} {_us(r['device_us']):>8} {_us(s['device_us']):>9} "
                  f"{_us(ratio):>6}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"rows": found, "ranks": world.size}, f, indent=1)
    return 0


def _us(value):
    """A table cell: a row whose graph could not be captured has no time."""
    return "n/a" if value is None else f"{value:.2f}"


def _pairs(found):
    """(random row, sentinel row) of each collective and size."""
    by = {(r["coll"], r["bytes"], r["data"]): r for r in found}
    return [(by[(c, b, "random")], by[(c, b, "sentinel")]) for c, b in dict.fromkeys((r["coll"], r["bytes"])
                                                                                  for r in found)]


if __name__ == "__main__":
    sys.exit(main())
