"""The LL128 torn-line probe as a tool: what each rank tested and found, and the agreed verdict.

    mpiexec -n 4 python -m hpcolls.tools.ll128_probe [--ms 200] [--runs 3] [--json FILE]

Opens a communicator's native path over all ranks (which runs the set-up probe, HPCOLLS_LL128_PROBE_MS
long, and says what it decided), then runs the probe `--runs` more times for `--ms` milliseconds each
over the same scratch (hpcolls/ll128_probe.py; native/include/hpcolls/ll128_probe.h says what it
proves). Rank 0 prints a table per run: per rank, the GPU, the peer pairs it wrote to and read from,
lines per pair, its writers' passes (the fewest of one writer), the line reads that carried this
run's flag, and the torn lines, stale lines and time-outs it found; then the verdict every rank
agreed on. Exit status 0 when the probe ran (whatever it found), 1 when it could not run.
"""
import argparse
import json
import sys

from mpi4py import MPI

import hpcolls
from hpcolls import ll128_probe
from hpcolls.binding import select_device


def table(rows):
    head = ("rank", "GPU", "pairs", "lines/pair", "passes", "fewest", "line reads", "torn", "stale", "timed out", "ms")
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for rank, gpu, r in rows:
        if r is None:
            lines.append(f"| {rank} | {gpu} | " + " | ".join(["-"] * (len(head) - 2)) + " |")
            continue
        lines.append(f"| {rank} | {gpu} | {r['pairs']} | {r['lines_per_pair']} | {r['iterations']} | "
                     f"{r['min_iterations']} | {r['observed']} | {r['torn']} | {r['stale']} | {r['timed_out']} | "
                     f"{r['seconds'] * 1e3:.1f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ms", type=int, default=200, help="milliseconds each run's writers write (at most 1000)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", help="write every rank's reports here (rank 0)")
    args = parser.parse_args(argv)
    world = MPI.COMM_WORLD
    device = select_device(world)
    comm = hpcolls.Communicator(world)
    nc = comm.native_comm(device) if device is not None else None
    if nc is None:
        if world.rank == 0:
            print(f"LL128 probe: no native path ({comm.native_path or 'no GPU'})")
        comm.close()
        return 1
    from cupy.cuda import runtime
    gpu = f"{device}: {runtime.getDeviceProperties(device)['name'].decode()}"
    out = {"ranks": world.size, "set_up_verdict": nc.ll128_available, "runs": []}
    if world.rank == 0:
        print(f"LL128 probe at {world.size} ranks; the set-up probe left LL128 "
              f"{'on' if nc.ll128_available else 'off'}")
    for run in range(args.runs):
        report, reason = ll128_probe.run(comm, nc, args.ms)
        on, why = ll128_probe.agree(comm, reason)
        rows = world.gather((world.rank, gpu, report), root=0)
        if world.rank == 0:
            print(f"\nrun {run + 1}: {args.ms} ms\n{table(rows)}\nverdict: LL128 {'on' if on else 'off: ' + why}")
            out["runs"].append({"ms": args.ms, "on": on, "why": why, "ranks": rows})
    if world.rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    comm.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
