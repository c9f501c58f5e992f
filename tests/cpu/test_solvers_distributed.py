"""Descriptors, numroc, block-cyclic index maps and grid shapes, against brute force."""
import numpy as np
import pytest

from solvers.distributed import Descriptor, default_shape, numroc, parse_shape
from solvers.distributed.indexing import global_to_local, local_indices, local_to_global, owner


def brute_force_layout(n, nb, src, nprocs):
    """Deal blocks of nb to processes one at a time; returns owner and local index per global."""
    owners, locals_, count = [], [], [0] * nprocs
    for g in range(n):
        p = ((g // nb) + src) % nprocs
        owners.append(p)
        locals_.append(count[p])
        count[p] += 1
    return owners, locals_, count


CASES = [(n, nb, src, p) for n in (0, 1, 7, 16, 33, 100) for nb in (1, 3, 8, 16, 200)
         for p in (1, 2, 3, 4) for src in range(p)]


@pytest.mark.parametrize("n,nb,src,nprocs", CASES)
def test_numroc_and_index_maps_match_brute_force(n, nb, src, nprocs):
    owners, locals_, count = brute_force_layout(n, nb, src, nprocs)
    for p in range(nprocs):
        assert numroc(n, nb, p, src, nprocs) == count[p]
        mine = [g for g in range(n) if owners[g] == p]
        assert local_indices(n, nb, p, src, nprocs).tolist() == mine
        for loc, g in enumerate(mine):
            assert local_to_global(loc, nb, p, src, nprocs) == g
    if n:
        g = np.arange(n)
        assert (owner(g, nb, src, nprocs) == np.array(owners)).all()
        assert (global_to_local(g, nb, nprocs) == np.array(locals_)).all()


def test_numroc_total_is_n():
    rng = np.random.default_rng()
    for _ in range(200):
        n, nb, p = rng.integers(0, 500), rng.integers(1, 70), rng.integers(1, 9)
        src = rng.integers(0, p)
        assert sum(numroc(n, nb, q, src, p) for q in range(p)) == n, (n, nb, p, src)


def test_numroc_rejects_bad_arguments():
    with pytest.raises(ValueError):
        numroc(10, 0, 0, 0, 1)
    with pytest.raises(ValueError):
        numroc(-1, 4, 0, 0, 1)


class _FakeGrid:
    """Just the coordinates a Descriptor needs (no communicator involved)."""
    def __init__(self, nprow, npcol, myrow, mycol):
        self.nprow, self.npcol, self.myrow, self.mycol = nprow, npcol, myrow, mycol


def test_descriptor_fields_and_lld():
    grid = _FakeGrid(3, 2, 2, 1)
    desc = Descriptor.create(10, 7, 4, 4, grid)
    # Rows 8..9 (block 2) go to process row 2: numroc = 2.
    assert (desc.m, desc.n, desc.mb, desc.nb, desc.rsrc, desc.csrc, desc.lld) == (10, 7, 4, 4, 0, 0, 2)
    assert desc.as_scalapack(5) == (1, 5, 10, 7, 4, 4, 0, 0, 2)
    # A rank with no rows still has LLD >= 1 (ScaLAPACK's rule).
    assert Descriptor.create(3, 3, 4, 4, _FakeGrid(2, 1, 1, 0)).lld == 1
    with pytest.raises(ValueError):
        Descriptor.create(4, 4, 0, 4, grid)
    with pytest.raises(ValueError):
        Descriptor.create(4, 4, 2, 2, grid, rsrc=3)


@pytest.mark.parametrize("p,expected", [(1, (1, 1)), (2, (1, 2)), (4, (2, 2)), (6, (2, 3)),
                                        (7, (1, 7)), (12, (3, 4)), (16, (4, 4))])
def test_default_shape_is_most_square(p, expected):
    assert default_shape(p) == expected


def test_parse_shape():
    assert parse_shape("2x3") == (2, 3)
    assert parse_shape("4X1") == (4, 1)
    for bad in ("2", "x2", "2x", "0x4", "axb", "2x2x2"):
        with pytest.raises(ValueError):
            parse_shape(bad)
