"""An existing mpi4py program made faster by one line: power iteration with small Allreduces.

The matrix is distributed by column blocks, so every step needs two collectives on small
device buffers: the n-vector y = A x (each rank holds a partial sum) and the Rayleigh quotient
xᵀAx (one number). With n in the hundreds both are latency-bound, the case hpcolls is for.

    mpiexec -n 4 python allreduce_drop_in.py               # through hpcolls (the "after")
    mpiexec -n 4 python allreduce_drop_in.py --no-hpcolls  # plain mpi4py (the "before")

Arrays are cupy arrays when a GPU is there (--device auto), numpy otherwise; with numpy buffers
hpcolls hands the call to MPI, so the program runs unchanged on a laptop. USE_HPCOLLS=0 in the
environment is the same as --no-hpcolls. Plain mpi4py with cupy buffers needs a CUDA-aware MPI.
"""
import argparse
import os
import time

import numpy as np
from mpi4py import MPI

import hpcolls


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hpcolls", action=argparse.BooleanOptionalAction,
                        default=os.environ.get("USE_HPCOLLS", "1") != "0",
                        help="wrap the communicator with hpcolls (default; USE_HPCOLLS=0 turns it off)")
    parser.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    parser.add_argument("--n", type=int, default=512, help="matrix order")
    parser.add_argument("--iters", type=int, default=1000, help="timed power-iteration steps")
    parser.add_argument("--seed", type=int, default=None, help="matrix seed (default: fresh, shared by all ranks)")
    return parser.parse_args()


def array_module(device, world):
    """cupy on a GPU (bound by node-local rank, as the program did before hpcolls), else numpy."""
    if device == "cpu":
        return np
    try:
        import cupy
        ndev = cupy.cuda.runtime.getDeviceCount()
    except Exception:  # no cupy, no driver: both mean "no GPU here"
        ndev = 0
    if ndev == 0:
        if device == "gpu":
            raise SystemExit("--device gpu: cupy cannot see a GPU")
        return np
    node = world.Split_type(MPI.COMM_TYPE_SHARED)
    cupy.cuda.Device(node.Get_rank() % ndev).use()
    node.Free()
    return cupy


def power_iteration(comm, xp, a_cols, cols, n, steps):
    """`steps` steps from the all-ones vector; returns (λ, this rank's part of x).

    Every rank holds A[:, cols] and x[cols]: A x is a sum of per-rank partial products.
    """
    def ready():
        # The MPI library reads device memory directly: the kernels that wrote it must be done.
        if xp is not np:
            xp.cuda.get_current_stream().synchronize()

    x = xp.full(cols.stop - cols.start, 1.0 / np.sqrt(n))
    lam = xp.zeros(1)
    for _ in range(steps):
        y = a_cols @ x
        ready()
        comm.Allreduce(MPI.IN_PLACE, y, op=MPI.SUM)  # y = A x, whole vector on every rank
        lam[...] = x @ y[cols]
        ready()
        comm.Allreduce(MPI.IN_PLACE, [lam, MPI.DOUBLE], op=MPI.SUM)  # λ = xᵀ A x
        x = y[cols] / xp.linalg.norm(y)
    return lam, x


def main():
    args = parse_args()

    comm = hpcolls.wrap(MPI.COMM_WORLD) if args.hpcolls else MPI.COMM_WORLD  # the one line; was: comm = MPI.COMM_WORLD

    rank, size = comm.Get_rank(), comm.Get_size()
    xp = array_module(args.device, MPI.COMM_WORLD)
    seed = comm.bcast(np.random.SeedSequence(args.seed).entropy if rank == 0 else None)
    # Nonnegative symmetric: a Perron eigenvalue well apart from the rest, so the check is sharp.
    rng = np.random.default_rng(seed)
    a = rng.random((args.n, args.n))
    a = (a + a.T) / 2
    bounds = np.linspace(0, args.n, size + 1).astype(int)
    cols = slice(bounds[rank], bounds[rank + 1])
    a_cols = xp.asarray(a[:, cols])

    power_iteration(comm, xp, a_cols, cols, args.n, 10)  # warm-up: first-call set-up is not timed
    comm.Barrier()
    start = time.perf_counter()
    lam, x = power_iteration(comm, xp, a_cols, cols, args.n, args.iters)
    if xp is not np:
        xp.cuda.get_current_stream().synchronize()
    elapsed = comm.allreduce(time.perf_counter() - start, op=MPI.MAX)

    # The same steps in plain numpy on one process: the answer this program must give.
    x_ref = np.full(args.n, 1.0 / np.sqrt(args.n))
    for _ in range(args.iters):
        y_ref = a @ x_ref
        lam_ref = x_ref @ y_ref
        x_ref = y_ref / np.linalg.norm(y_ref)
    lam_host = float(lam[0])
    x_host = np.asarray(x.get() if xp is not np else x)
    lam_err = abs(lam_host - lam_ref) / abs(lam_ref)
    x_err = np.max(np.abs(x_host - x_ref[cols]))
    top = np.linalg.eigvalsh(a)[-1]
    ok = comm.allreduce(int(lam_err < 1e-10 and x_err < 1e-9 and abs(lam_host - top) < 1e-8 * top), op=MPI.MIN)

    if rank == 0:
        print(f"communicator: {type(comm).__name__}, arrays: {xp.__name__}, {size} ranks, n = {args.n}")
        print(f"λ = {lam_host:.12g} after {args.iters} steps; {1e6 * elapsed / args.iters:.1f} µs per step "
              f"(2 Allreduce of {8 * args.n} B and 8 B each)")
        verdict = "agrees with numpy" if ok else "DISAGREES with numpy"
        print(f"{verdict}: |Δλ|/λ = {lam_err:.1e}, max |Δx| = {x_err:.1e}, largest eigenvalue {top:.12g}")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
