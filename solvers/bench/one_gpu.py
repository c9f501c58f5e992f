"""What the one-GPU stage benchmarks (sb2st, sy2sb, sygst, ormtr_sb2st here) share: cupy, this
process's GPU and the collectives of a one-rank grid; where the GPU path cannot run, the program
exits saying why."""
from ..backend import Collectives
from ..backend.arrays import get_cupy
from ..backend.device import select_device
from ..distributed import ProcessGrid


def one_gpu(prog, what):
    """(cupy, Collectives of a COMM_SELF grid on the GPU, the GPU's name) for ``prog`` timing
    ``what``; free the grid (coll.grid.free()) when done."""
    from mpi4py import MPI   # here, not at the top: its import initializes MPI (solvers/__init__.py)
    try:
        cupy = get_cupy()
    except ImportError as exc:
        raise SystemExit(f"{prog} times {what}: {exc}") from None
    device = select_device(MPI.COMM_SELF)
    coll = Collectives(ProcessGrid(MPI.COMM_SELF), "mpi", cupy)
    return cupy, coll, cupy.cuda.runtime.getDeviceProperties(device)["name"].decode()
