"""The device API's allreduce, timed (docs/DEVICE_API.md; issue #45's measurement): device time
of one float64 SUM allreduce of 8 B to 64 KiB made inside a kernel (hpcolls::device::allreduce,
block scope, one block), against the communicator's host-launched Allreduce of the same size, from
CUDA graphs as the benchmark times them (timing.py), in one run. Three rows a size:

  host        comm.Allreduce, --graph-calls calls in a graph: device µs per call
  launch      a kernel whose only work is one device allreduce, a graph of launches: the
              device API's cost where a kernel is launched for it
  in-kernel   one kernel doing LOOP device allreduces back to back: µs per allreduce, the cost
              inside a kernel that runs anyway (what a fused kernel pays)
  grid        the same with hpcolls::device::allreduce_grid in a cooperative launch of the
              rank's share of the SMs (at most 64 blocks): the message spread over the grid; timed
              by events around one launch (not captured into a graph)

Every result is checked (each rank contributes rank + 1: every element must be N(N+1)/2) and
every status word must read Ok. Under mpiexec on the GPU machine:

  mpiexec -n 2 python -m hpcolls.tools.bench.device_api [--json PATH]
"""
import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from mpi4py import MPI

from ...binding import select_device
from .runners import communicator, release
from .timing import event_samples, graph_timed, slowest_rank_summary

SIZES = (8, 64, 512, 4096, 16384, 65536)
LOOP = 100
INCLUDE = Path(__file__).resolve().parents[3] / "native" / "include"
SOURCE = r"""
#include <hpcolls/device/collectives.cuh>
namespace dev = hpcolls::device;

__device__ void note(int* status, dev::Status s) {
  if (threadIdx.x == 0 && s != dev::Status::Ok && *status == 0) *status = int(s);
}

// The struct is read into shared memory once a launch, as a kernel that takes it by value reads it
// from the constant bank: each operation then finds the peers' scratch without a global load.
__device__ const hpcolls_device_comm_t& local_copy(const hpcolls_device_comm_t* c) {
  __shared__ hpcolls_device_comm_t comm;
  if (threadIdx.x == 0) comm = *c;
  __syncthreads();
  return comm;
}

extern "C" __global__ void allreduce_once(const hpcolls_device_comm_t* c, const double* s, double* r,
                                          unsigned long long n, int* status) {
  note(status, dev::allreduce<hpcolls::Op::Sum>(local_copy(c), s, r, n));
}

extern "C" __global__ void allreduce_loop(const hpcolls_device_comm_t* c, const double* s, double* r,
                                          unsigned long long n, int loop, int* status) {
  const hpcolls_device_comm_t& comm = local_copy(c);
  for (int i = 0; i < loop; ++i) {
    const dev::Status st = dev::allreduce<hpcolls::Op::Sum>(comm, s, r, n);
    note(status, st);
    if (st != dev::Status::Ok) return;
  }
}

extern "C" __global__ void allreduce_grid_loop(const hpcolls_device_comm_t* c, const double* s, double* r,
                                               unsigned long long n, int loop, int* status) {
  const hpcolls_device_comm_t& comm = local_copy(c);
  for (int i = 0; i < loop; ++i) {
    const dev::Status st = dev::allreduce_grid<hpcolls::Op::Sum>(comm, s, r, n);
    if (blockIdx.x == 0) note(status, st);
    if (st != dev::Status::Ok) return;
  }
}
"""
THREADS = 256


def rows(cupy, timing, loop):
    comm = communicator("auto")
    world = MPI.COMM_WORLD
    device = cupy.cuda.Device().id
    comm.Allreduce(MPI.IN_PLACE, cupy.zeros(1), op=MPI.SUM)  # opens the native path (collective)
    dc = comm.device_comm(device)
    raw = dc.to_device(cupy)
    once, looped, grid_looped = _kernels(cupy, world)
    blocks = comm.native_comm(device).max_blocks  # the rank's share of the SMs, as the host path's grids
    status = cupy.zeros(1, dtype=cupy.int32)
    expected = world.size * (world.size + 1) / 2
    out = []
    for size in SIZES:
        count = size // 8
        if size > dc.max_bytes["allreduce"]:
            continue
        send = cupy.full(count, float(world.rank + 1))
        recv = cupy.full(count, np.nan)
        n = np.uint64(count)
        calls = {
            "host": (lambda: comm.Allreduce(send, recv, op=MPI.SUM), timing, 1),
            "launch": (lambda: once((1,), (THREADS,), (raw, send, recv, n, status)), timing, 1),
            "in-kernel": (lambda: looped((1,), (THREADS,), (raw, send, recv, n, np.int32(loop), status)),
                          SimpleNamespace(graph_calls=1, reps=timing.reps, warmup=timing.warmup), loop),
        }
        for how, (call, how_timed, per_call) in calls.items():
            recv.fill(np.nan)
            found = graph_timed(how_timed, cupy, call)
            cupy.cuda.get_current_stream().synchronize()
            ok = bool((recv == expected).all()) and int(status.get()[0]) == 0
            if not all(world.allgather(ok)):
                raise RuntimeError(f"device_api bench: {how} {size} B gave a wrong result or status "
                                   f"{int(status.get()[0])} on some rank")
            us = found[0][0] / per_call if found else None
            out.append(dict(how=how, bytes=size, device_us=us))
        recv.fill(np.nan)
        stream = cupy.cuda.get_current_stream()
        stream.synchronize()
        us = slowest_rank_summary(event_samples(timing, cupy, stream, lambda: grid_looped(
            (blocks,), (THREADS,), (raw, send, recv, n, np.int32(loop), status)), loop))[0]
        ok = bool((recv == expected).all()) and int(status.get()[0]) == 0
        if not all(world.allgather(ok)):
            raise RuntimeError(f"device_api bench: grid {size} B gave a wrong result or status "
                               f"{int(status.get()[0])} on some rank")
        out.append(dict(how="grid", bytes=size, device_us=us, blocks=blocks))
    return out


def _kernels(cupy, world):
    """The three kernels, compiled by nvcc on rank 0 first; the other ranks then load cupy's cached
    binary instead of compiling the same source at once. The grid loop's module is launched
    cooperatively (cupy: cuLaunchCooperativeKernel)."""
    def load():
        options = ("-std=c++17", f"-I{INCLUDE}")
        plain = cupy.RawModule(code=SOURCE, options=options, backend="nvcc")
        cooperative = cupy.RawModule(code=SOURCE, options=options, backend="nvcc", enable_cooperative_groups=True)
        return (plain.get_function("allreduce_once"), plain.get_function("allreduce_loop"),
                cooperative.get_function("allreduce_grid_loop"))
    found = load() if world.rank == 0 else None
    world.Barrier()
    return found or load()


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m hpcolls.tools.bench.device_api", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", metavar="PATH")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--loop", type=int, default=LOOP, help=f"device allreduces per in-kernel launch (default {LOOP})")
    args = p.parse_args(argv)
    import cupy
    world = MPI.COMM_WORLD
    select_device(world)
    timing = SimpleNamespace(graph_calls=100, reps=args.reps, warmup=3)
    try:
        found = rows(cupy, timing, args.loop)
    finally:
        release()
    if world.rank == 0:
        print(f"# device API allreduce (float64 SUM, one block of {THREADS}), {world.size} ranks: device us per allreduce")
        blocks = next((r["blocks"] for r in found if r["how"] == "grid"), None)
        print(f"# grid: allreduce_grid, {blocks} blocks of {THREADS}, cooperative launch")
        print(f"{'bytes':>7} {'host':>7} {'launch':>7} {'in-kernel':>9} {'host/in-kernel':>14} {'grid':>7} "
              f"{'host/grid':>9}")
        by = {(r["how"], r["bytes"]): r["device_us"] for r in found}
        for size in dict.fromkeys(r["bytes"] for r in found):
            host, inner, grid = by.get(("host", size)), by.get(("in-kernel", size)), by.get(("grid", size))
            ratio = host / inner if host and inner else None
            print(f"{size:>7} {_us(host):>7} {_us(by.get(('launch', size))):>7} {_us(inner):>9} {_us(ratio):>14} "
                  f"{_us(grid):>7} {_us(host / grid if host and grid else None):>9}")
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"rows": found, "ranks": world.size, "loop": args.loop}, f, indent=1)
    return 0


def _us(value):
    return "n/a" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    sys.exit(main())
