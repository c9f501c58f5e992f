"""Block-cyclic layout under MPI: grids, scatter/gather, replication, panels, transpose."""
import numpy as np
import pytest
from mpi4py import MPI

from solvers.backend import Collectives
from solvers.distributed import Descriptor, DistMatrix, ProcessGrid
from solvers.distributed.indexing import local_indices
from solvers.distributed.panels import replicate_block_col, replicate_block_row
from solvers.distributed.redistribute import lower_triangle, symmetrize, transpose
from solver_testing import grid_shapes, share_node_cores

SIZE = MPI.COMM_WORLD.Get_size()
share_node_cores(MPI.COMM_WORLD)
SHAPES = grid_shapes(SIZE)
SIZES = [(1, 1), (5, 2), (13, 4), (16, 4), (9, 20)]     # (n, nb): nb | n, nb ∤ n, nb > n




def test_grid_coordinates_and_subcommunicators(grid, comm):
    assert grid.rank_of(grid.myrow, grid.mycol) == comm.Get_rank()
    assert grid.row_comm.Get_size() == grid.npcol and grid.row_comm.Get_rank() == grid.mycol
    assert grid.col_comm.Get_size() == grid.nprow and grid.col_comm.Get_rank() == grid.myrow
    # Every member of my row communicator is on my grid row.
    assert set(grid.row_comm.allgather(grid.myrow)) == {grid.myrow}
    assert set(grid.col_comm.allgather(grid.mycol)) == {grid.mycol}


def test_default_grid_and_bad_grids(comm):
    g = ProcessGrid(comm)
    assert g.nprow * g.npcol == SIZE and g.nprow <= g.npcol
    g.free()
    for shape in [(SIZE + 1, 1), (2, SIZE), (0, SIZE)]:
        with pytest.raises(ValueError, match="grid"):
            ProcessGrid(comm, shape)


@pytest.mark.parametrize("n,nb", SIZES)
def test_scatter_gather_and_replicate(grid, seed, n, nb):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n + 3))
    coll = Collectives(grid)
    dist = DistMatrix.scatter(a if grid.rank == 0 else None, a.shape, a.dtype, grid, nb, coll)
    same = DistMatrix.from_global(a, grid, nb)
    assert np.array_equal(dist.local, same.local), f"seed={seed}"
    assert np.array_equal(dist.local, a[np.ix_(dist.rows, dist.cols)])
    back = dist.gather(coll)
    if grid.rank == 0:
        assert np.array_equal(back, a), f"seed={seed}"
    else:
        assert back is None
    assert np.array_equal(dist.to_global(coll), a), f"seed={seed}"


def test_empty_is_poisoned(grid):
    m = DistMatrix.empty(7, 5, 2, grid, np.float64)
    assert np.isnan(m.local).all()


@pytest.mark.parametrize("n,nb", SIZES)
def test_panels(grid, seed, n, nb):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n))
    coll = Collectives(grid)
    dist = DistMatrix.from_global(a, grid, nb)
    for k in range((n + nb - 1) // nb):
        j0, j1 = k * nb, min((k + 1) * nb, n)
        for r0 in sorted({0, j0, min(j1, n)}):
            assert np.array_equal(replicate_block_col(dist, k, r0, coll), a[r0:, j0:j1]), f"seed={seed}"
        assert np.array_equal(replicate_block_row(dist, k, j1, coll), a[j0:j1, :j1]), f"seed={seed}"


@pytest.mark.parametrize("n,nb", SIZES)
def test_transpose_and_symmetrize(grid, seed, n, nb):
    rng = np.random.default_rng(seed)
    rect = rng.standard_normal((n, n + 2))
    coll = Collectives(grid)
    t = transpose(DistMatrix.from_global(rect, grid, nb), coll)
    assert t.shape == (n + 2, n)
    assert np.array_equal(t.to_global(coll), rect.T), f"seed={seed}"
    sq = rng.standard_normal((n, n))
    for lower in (True, False):
        poisoned = sq.copy()
        poisoned[np.triu_indices(n, 1) if lower else np.tril_indices(n, -1)] = np.nan
        dist = DistMatrix.from_global(poisoned, grid, nb)
        tri = np.tril(sq) if lower else np.triu(sq)
        full = symmetrize(dist, lower, coll).to_global(coll)
        assert np.array_equal(full, tri + tri.T - np.diag(np.diag(sq))), f"seed={seed}"
        low = lower_triangle(dist, lower, coll).to_global(coll)
        assert np.array_equal(low, tri if lower else tri.T), f"seed={seed}"


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
@pytest.mark.parametrize("n,nb", SIZES)
def test_symmetrize_overwriting_is_the_copying_way(grid, seed, monkeypatch, n, nb, dtype):
    """overwrite=True gives the copying way's bits (NaN in the unreferenced triangle, non-real
    diagonal, -0.0 entries, blocks of 3 columns so that n spans several); on one rank in the input's storage."""
    import solvers.distributed.redistribute as redistribute
    monkeypatch.setattr(redistribute, "SYMMETRIZE_BLOCK", 3)
    rng = np.random.default_rng(seed)
    coll = Collectives(grid)
    for lower in (True, False):
        sq = rng.standard_normal((n, n)).astype(dtype)
        if dtype == np.complex128:
            sq += 1j * rng.standard_normal((n, n))
        sq[rng.random((n, n)) < 0.2] = -0.0        # the sums of the copying way make them +0.0
        sq[np.triu_indices(n, 1) if lower else np.tril_indices(n, -1)] = np.nan
        expected = symmetrize(DistMatrix.from_global(sq, grid, nb), lower, coll).local
        given = DistMatrix.from_global(sq, grid, nb)
        full = symmetrize(given, lower, coll, overwrite=True)
        assert np.array_equal(full.local, expected), f"seed={seed} lower={lower}"
        assert np.array_equal(np.signbit(full.local.real), np.signbit(expected.real))
        if grid.size == 1:
            assert full.local is given.local


@pytest.mark.parametrize("m,n,mb,nb", [
    (1, 1, 1, 1), (7, 3, 2, 2), (3, 7, 2, 2), (13, 20, 4, 4), (16, 8, 4, 4), (5, 9, 20, 20),
    (0, 6, 2, 2), (11, 6, 3, 2), (6, 11, 2, 5)])             # n ∤ nb, nb > n, empty, mb ≠ nb
def test_transpose_shapes_and_traffic(grid, seed, m, n, mb, nb):
    """Every entry lands transposed; one Alltoallv moves each local entry once (none on one
    rank)."""
    a = np.random.default_rng(seed).standard_normal((m, n))
    local = a[np.ix_(local_indices(m, mb, grid.myrow, 0, grid.nprow),
                     local_indices(n, nb, grid.mycol, 0, grid.npcol))]
    coll = Collectives(grid)
    with coll.stage("transpose"):
        t = transpose(DistMatrix(local, Descriptor.create(m, n, mb, nb, grid), grid), coll)
    assert (t.desc.m, t.desc.n, t.desc.mb, t.desc.nb) == (n, m, nb, mb)
    assert t.local.flags.c_contiguous
    assert np.array_equal(t.local, a.T[np.ix_(t.rows, t.cols)]), f"seed={seed}"
    by_op = coll.stats["transpose"].by_op
    if grid.size == 1:
        assert by_op == {}
    else:
        assert list(by_op) == ["alltoallv"] and by_op["alltoallv"][:2] == [1, local.nbytes]
