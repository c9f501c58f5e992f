"""The fused column loop of the one-stage reduction (native/solvers/sytrd_fused.cu: a panel's
columns in one cooperative launch, each column's AllReduce made inside it by hpcolls' device API)
against the kernel loop it replaces, over two ranks or more (one rank has no column collective to
fuse: the module skips there, saying so). Written before the fused loop ever ran on a GPU.

- sytrd alone, on every process grid: the fused loop runs where it is asked for (the stage note
  names it), one launch per panel; its d, e, tau and stored reflectors are the same bits on every
  rank and, where the ranks share one GPU (the host path's AllReduce is then hpcolls' own, in rank
  order as the device API's), the very bits of the kernel loop (both reduce over the same step
  grids in the same order: sytrd_steps.cuh).
- sygvd by the one-stage reduction with each loop: eigenvalues bitwise equal on every rank (and
  between the loops on one GPU), residuals and eigenvalue errors under the command line's
  threshold, as the other GPU suites check them.
Run under mpiexec with ranks sharing a GPU under CUDA MPS (tests/gpu_steps/fused_sytrd.steps)."""
import socket

import numpy as np
import pytest

from solver_gpu import COMM, DTYPE_IDS, DTYPES, cupy, wide

if COMM.Get_size() < 2:
    pytest.skip("the fused loop needs two ranks or more (one rank has no column collective to fuse)",
                allow_module_level=True)
pytest.importorskip("solvers._kernels", reason="solvers._kernels not built (nvcc at install)")
pytest.importorskip("hpcolls", reason="the fused loop all-reduces through hpcolls' device API")

from solvers.backend import Collectives  # noqa: E402
from solvers.cli.check import THRESHOLD, eigen_ratios, eigenvalue_ratio  # noqa: E402
from solvers.distributed import DistMatrix  # noqa: E402
from solvers.plan import plan_for  # noqa: E402
from solvers.problems import random_symmetric, spd_with_condition  # noqa: E402
from solvers.sygvd import sygvd  # noqa: E402
from solvers.sytrd import sytrd  # noqa: E402

LOOPS = ("kernels", "fused")
# Whether every rank runs on one GPU: the kernel loop's host AllReduce is then hpcolls' native one
# (NCCL refuses ranks sharing a GPU), which reduces in rank order as the device API does.
ONE_GPU = len(set(COMM.allgather((cupy.cuda.Device().pci_bus_id, socket.gethostname())))) == 1


def _same_on_every_rank(blob):
    return len(set(COMM.allgather(blob))) == 1


def _reduce(a, grid, coll, nb, loop):
    """(d, e, tau and the stored reflectors as bytes, the sytrd notes) of sytrd by ``loop``."""
    c = DistMatrix.from_global(cupy.asarray(a), grid, nb)
    coll.reset()
    d, e, tau = sytrd(c, coll, loop=loop)
    notes = coll.stats["other"].notes
    blob = b"".join(cupy.asnumpy(x).tobytes() for x in (d, e, tau, c.to_global(coll)))
    return blob, notes


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n, nb", [(2, 2), (45, 8), (130, 32), (300, 64), (700, 256)])
def test_fused_sytrd_gives_the_kernel_loops_bits(grid, seed, dtype, n, nb):
    a = random_symmetric(np.random.default_rng([seed, n]), n, np.dtype(dtype).kind == "c").astype(dtype)
    coll = Collectives(grid, "hpcolls", cupy)
    kernels, kernel_notes = _reduce(a, grid, coll, nb, "kernels")
    fused, notes = _reduce(a, grid, coll, nb, "fused")
    assert "fused loop (one launch per panel" in notes["column_loop"], notes["column_loop"]
    assert "kernel loop" in kernel_notes["column_loop"], kernel_notes["column_loop"]
    panels = -(-n // nb)
    assert notes["launches_per_column"] == panels / n, notes
    assert kernel_notes["launches_per_column"] >= 5 * (n - 1) / n, kernel_notes
    assert coll.stats["other"].by_op["allreduce"][0] >= n - 1, "one AllReduce counted per reflector"
    what = f"seed={seed} n={n} nb={nb} grid {grid.nprow}x{grid.npcol}"
    assert _same_on_every_rank(fused), what + ": the fused loop's ranks computed different bits"
    if ONE_GPU:
        assert fused == kernels, what + ": the fused loop's bits differ from the kernel loop's"


def _solve(grid, coll, a, b, dtype, nb, loop):
    da = DistMatrix.from_global(cupy.asarray(a.astype(dtype)), grid, nb)
    db = DistMatrix.from_global(cupy.asarray(b.astype(dtype)), grid, nb)
    plan = plan_for(da, method="distributed", reduction="1stage", sytrd_loop=loop)
    assert plan.sytrd_loop == loop, plan
    coll.reset()
    w, z = sygvd(da, db, coll, itype=1, jobz="V", uplo="L", plan=plan)
    stage = "hetrd" if np.dtype(dtype).kind == "c" else "sytrd"
    return cupy.asnumpy(w), cupy.asnumpy(z.to_global(coll)), coll.stats[stage].notes


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n, nb", [(45, 8), (300, 64)])
def test_sygvd_with_the_fused_loop(grid, seed, dtype, n, nb):
    rng = np.random.default_rng([seed, n])
    hermitian = np.dtype(dtype).kind == "c"
    a, b = random_symmetric(rng, n, hermitian), spd_with_condition(rng, n, 100.0, hermitian)
    coll = Collectives(grid, "hpcolls", cupy)
    solved = {loop: _solve(grid, coll, a, b, dtype, nb, loop) for loop in LOOPS}
    what = f"seed={seed} n={n} nb={nb} grid {grid.nprow}x{grid.npcol}"
    assert "fused loop (one launch" in solved["fused"][2]["column_loop"], solved["fused"][2]
    eps = float(np.finfo(dtype).eps)
    a64, b64 = a.astype(dtype).astype(wide(dtype)), b.astype(dtype).astype(wide(dtype))
    for loop, (w, z, _) in solved.items():
        assert _same_on_every_rank(w.tobytes()), f"{what} {loop}: eigenvalues differ between ranks"
        w64 = w.astype(np.float64)
        ratios = eigenvalue_ratio(a64, b64, w64, 1, eps)
        ratios.update(eigen_ratios(a64, b64, w64, z.astype(wide(dtype)), 1, eps))
        for name, value in ratios.items():
            assert value < THRESHOLD, f"{what} {loop}: {name} = {value}"
    if ONE_GPU:
        assert solved["fused"][0].tobytes() == solved["kernels"][0].tobytes(), \
            what + ": the loops' eigenvalues differ"
