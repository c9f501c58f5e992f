"""Staged-route benchmark: python -m hpcolls.tools.staging_bench (under mpiexec, with cupy and a
GPU).

Times device-buffer Bcast, Send+Recv (a round trip between rank pairs 0-1, 2-3, ...)
and Iallreduce+Wait through MPI staged through host memory, for messages of
8 B to 1 MiB, once with the pinned host blocks each communicator reuses (HPCOLLS_STAGING=pinned,
the default) and once with fresh pageable memory per call (HPCOLLS_STAGING=pageable), in the same
run. Per size and call: the median over --reps of the mean µs per call of
--iters calls, and pageable / pinned. Every timed configuration is checked once first (exact
integer data). The staged route is what an MPI that is not CUDA-aware gets; this sets
HPCOLLS_MPI_CUDA_AWARE=0 for itself, which is safe on any MPI.
"""
import argparse
import os
import statistics
import sys
import time

from mpi4py import MPI

from .. import settings
from ..communicator import wrap
from ..staging import cuda_aware
from .info import mpi_library


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m hpcolls.tools.staging_bench", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--min-bytes", type=int, default=8)
    p.add_argument("--max-bytes", type=int, default=1 << 20)
    p.add_argument("--factor", type=int, default=4, help="size step (default 4: 8 B, 32 B, ..., 512 KiB, 1 MiB)")
    p.add_argument("--iters", type=int, default=50)
    p.add_argument("--reps", type=int, default=5)
    return p.parse_args(argv)


def sizes(args):
    n, out = args.min_bytes, []
    while n < args.max_bytes:
        out.append(n)
        n *= args.factor
    return out + [args.max_bytes]


CALLS = ("Bcast", "Send+Recv round trip", "Iallreduce+Wait")


def _calls(comm, cp, nbytes):
    """{name: (call(), check() -> bool)} on fresh device buffers of nbytes (int64 data)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    count = max(1, nbytes // 8)
    mine = cp.arange(count, dtype=cp.int64) + rank
    bcast = cp.empty(count, cp.int64)
    reduced = cp.empty(count, cp.int64)
    partner = rank ^ 1
    got = cp.empty(count, cp.int64)

    def bcast_call():
        if rank == 0:
            bcast[...] = mine
        comm.Bcast(bcast, root=0)

    def pingpong():
        if partner >= size:
            return
        if rank % 2 == 0:
            comm.Send(mine, partner, tag=1)
            comm.Recv(got, partner, tag=1)
        else:
            comm.Recv(got, partner, tag=1)
            comm.Send(mine, partner, tag=1)

    def iallreduce():
        comm.Iallreduce(mine, reduced, op=MPI.SUM).Wait()

    base = cp.arange(count, dtype=cp.int64)
    return dict(zip(CALLS, (
        (bcast_call, lambda: bool((bcast == base).all())),
        (pingpong, lambda: partner >= size or bool((got == base + partner).all())),
        (iallreduce, lambda: bool((reduced == size * base + size * (size - 1) // 2).all())))))


def _time(comm, call, iters, reps, stream):
    per_rep = []
    for _ in range(reps):
        comm.Barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        stream.synchronize()
        per_rep.append((time.perf_counter() - t0) / iters * 1e6)
    return comm.allreduce(statistics.median(per_rep), op=MPI.MAX)  # the slowest rank's


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        import cupy as cp
    except ImportError:
        print("staging_bench: needs cupy and a GPU", file=sys.stderr)
        return 2
    os.environ["HPCOLLS_MPI_CUDA_AWARE"] = "0"  # the tool's own process: the route under test
    cuda_aware.cache_clear()
    comms = {}
    for kind in ("pinned", "pageable"):
        with settings.overridden({"HPCOLLS_STAGING": kind}):
            comms[kind] = wrap(MPI.COMM_WORLD, algo="mpi")
            comms[kind].staging_pool  # noqa: B018 - made now, of the kind HPCOLLS_STAGING names here
    world = MPI.COMM_WORLD
    stream = cp.cuda.get_current_stream()
    if world.Get_rank() == 0:
        print(f"# staged MPI route, {world.Get_size()} ranks, {mpi_library()}")
        print(f"# staging: pinned = {comms['pinned'].staging_pool.kind} (reused per communicator), "
              "pageable = fresh per call")
        print(f"# {'bytes':>8}  {'call':<20} {'pinned µs':>10} {'pageable µs':>12} {'pageable/pinned':>16}")
    wrong = 0
    for nbytes in sizes(args):
        times = {}
        for kind, c in comms.items():
            for name, (call, check) in _calls(c, cp, nbytes).items():
                call()
                stream.synchronize()
                wrong += int(not world.allreduce(check(), op=MPI.LAND))
                times[(name, kind)] = _time(world, call, args.iters, args.reps, stream)
        if world.Get_rank() == 0:
            for name in CALLS:
                pinned, pageable = times[(name, "pinned")], times[(name, "pageable")]
                print(f"  {nbytes:>8}  {name:<20} {pinned:>10.1f} {pageable:>12.1f} {pageable / pinned:>16.2f}")
    for c in comms.values():
        c.close()
    if world.Get_rank() == 0 and wrong:
        print(f"# {wrong} configuration(s) gave a wrong result", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
