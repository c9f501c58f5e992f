"""The two-stage reduction's distributed stages on every grid (#27): sy2sb / he2hb's band and
reflectors (Q1ᴴ A Q1 is the band it returns, Q1 unitary, the band bitwise alike on every rank,
for chunks smaller than a block, bandwidths below the block size, n < b and n not a multiple of
b), its collectives per panel, bitwise-identical eigenvalues everywhere, and the argument checks
decided on every rank alike. The end-to-end solves with reduction='2stage' are the
parametrized tests of test_solvers_sygvd_solve.py and test_solvers_sygvd_subsets.py."""
import numpy as np
import pytest
from mpi4py import MPI

from solvers.backend import Collectives
from solvers.distributed import DistMatrix, ProcessGrid
from solvers.errors import InputError
from solvers.ormtr import ormtr
from solvers.sy2sb import panel_count, sy2sb
from solvers.sygvd import sygvd
from solvers.problems import band_to_full, random_symmetric, spd_with_condition
from solver_testing import share_node_cores, with_junk

share_node_cores(MPI.COMM_WORLD)
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
DTYPE_IDS = ["f32", "f64", "c64", "c128"]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("n,nb,band,chunk", [(37, 8, 4, 5), (37, 8, 8, None), (20, 6, 3, 2), (5, 4, 4, None),
                                             (9, 4, 2, 3), (3, 2, 1, 1), (24, 6, 2, 7), (31, 7, 7, 100),
                                             (6, 8, 8, None)])
def test_sy2sb_makes_the_band_it_returns(grid, seed, dtype, n, nb, band, chunk):
    rng = np.random.default_rng(seed)
    a = random_symmetric(rng, n, np.dtype(dtype).kind == "c").astype(dtype)
    coll = Collectives(grid)
    c = DistMatrix.from_global(a.copy(), grid, nb)
    with coll.stage("sy2sb"):
        ab, tau = sy2sb(c, coll, band, chunk=chunk)
    every = grid.comm.allgather(ab.tobytes() + tau.tobytes())
    assert all(x == every[0] for x in every), f"seed={seed}: the band differs between ranks"
    q = ormtr(c, tau, DistMatrix.from_global(np.eye(n, dtype=dtype), grid, nb), coll, offset=band)
    q = q.to_global(coll)
    eps = np.finfo(dtype).eps
    scale = np.abs(a).max() * n * eps
    assert np.abs(q.conj().T @ a @ q - band_to_full(ab)).max() < 10 * scale, f"seed={seed}"
    assert np.abs(q.conj().T @ q - np.eye(n)).max() < 10 * n * eps, f"seed={seed}"
    assert coll.stats["sy2sb"].notes["panels"] == panel_count(n, band)


def test_sy2sb_collectives_per_panel(grid, seed):
    """Per panel: the column-Allreduce that assembles it on its grid column (only there, and
    only with more than one grid row), one Bcast of its factors to the whole grid and one
    Allreduce of C₂₂ V; one Allreduce more for the last diagonal block. None at one rank."""
    rng = np.random.default_rng(seed)
    n, nb, band = 45, 8, 4
    coll = Collectives(grid)
    c = DistMatrix.from_global(random_symmetric(rng, n), grid, nb)
    with coll.stage("sy2sb"):
        sy2sb(c, coll, band)
    ops = coll.stats["sy2sb"].by_op
    panels = panel_count(n, band)
    several = grid.size > 1
    mine = sum(1 for p in range(panels) if c.block_owner_col(p * band // nb) == grid.mycol)
    assert ops.get("bcast", [0])[0] == panels * several
    assert ops.get("allreduce", [0])[0] == (panels + 1) * several + mine * (grid.nprow > 1)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128], ids=["f64", "c128"])
def test_two_stage_eigenvalues_bitwise_alike_on_every_rank(grid, seed, dtype):
    rng = np.random.default_rng(seed)
    n, nb = 41, 6
    hermitian = np.dtype(dtype).kind == "c"
    a, b = random_symmetric(rng, n, hermitian), spd_with_condition(rng, n, 30.0, hermitian)
    coll = Collectives(grid)
    w, z = sygvd(DistMatrix.from_global(with_junk(rng, a, True), grid, nb),
                 DistMatrix.from_global(with_junk(rng, b, True), grid, nb), coll,
                 method="distributed", reduction="2stage", band=3)
    every = grid.comm.allgather(w.tobytes())
    assert all(x == every[0] for x in every), f"seed={seed}: eigenvalues differ between ranks"
    stages = coll.stats
    trd, bt2 = ("hb2st", "unmtr_hb2st") if hermitian else ("sb2st", "ormtr_sb2st")
    assert stages[trd].notes["chase"] and stages[bt2].by_op.get("alltoallv", [0])[0] == (grid.size > 1)


@pytest.mark.parametrize("reduction,band,message", [
    ("3stage", None, "reduction must be one of auto, 1stage, 2stage"),
    ("2stage", 3, "bandwidth 3 must be a positive divisor of the block size nb = 8"),
    ("2stage", 0, "bandwidth 0 must be a positive divisor")])
def test_bad_reduction_or_band_fails_on_every_rank(comm, seed, reduction, band, message):
    rng = np.random.default_rng(seed)
    grid = ProcessGrid(comm)
    try:
        a, b = random_symmetric(rng, 20), spd_with_condition(rng, 20, 10.0)
        coll = Collectives(grid)
        with pytest.raises(InputError, match=message):
            sygvd(DistMatrix.from_global(a, grid, 8), DistMatrix.from_global(b, grid, 8), coll,
                  method="distributed", reduction=reduction, band=band)
        assert "potrf" not in coll.stats     # refused before any work
    finally:
        grid.free()
