"""hpcolls.hierarchy under real MPI: node groups, inter-node groups, emulated nodes of world ranks,
ranks that disagree, the reduction order's reference."""
import numpy as np
import pytest
from mpi4py import MPI

from hpcolls import dtypes, hierarchy


def _build(comm, monkeypatch, k):
    if k is None:
        monkeypatch.delenv("HPCOLLS_NODE_SIZE", raising=False)
    else:
        monkeypatch.setenv("HPCOLLS_NODE_SIZE", str(k))
    return hierarchy.node_hierarchy(comm)


@pytest.mark.parametrize("k", [1, 2, 4])
def test_emulated_nodes(comm, monkeypatch, k):
    size = comm.Get_size()
    if size % k:
        pytest.skip(f"k={k} does not divide {size}")
    h = _build(comm, monkeypatch, k)
    try:
        assert h.source == f"HPCOLLS_NODE_SIZE={k}"
        assert h.nodes == [list(range(s, s + k)) for s in range(0, size, k)]
        assert h.leaders == list(range(0, size, k))
        rank = comm.Get_rank()
        assert (h.node_index, h.local_index) == (rank // k, rank % k)
        assert h.intra.Get_size() == k and h.intra.Get_rank() == rank % k
        members = h.inter.allgather(rank)
        assert members == [n * k + rank % k for n in range(size // k)]
    finally:
        h.free()


def test_shared_nodes(comm, monkeypatch):
    h = _build(comm, monkeypatch, None)
    try:
        assert h.source == "SHARED"
        shared = comm.Split_type(MPI.COMM_TYPE_SHARED)
        same_node = sorted(shared.allgather(comm.Get_rank()))
        shared.Free()
        assert h.nodes[h.node_index] == same_node
        assert sorted(r for members in h.nodes for r in members) == list(range(comm.Get_size()))
        assert comm.allgather(h.nodes) == [h.nodes] * comm.Get_size()
    finally:
        h.free()


def test_emulated_nodes_come_from_world_ranks(comm, monkeypatch):
    """A sub-communicator's emulated nodes are those its ranks sit on: world ranks k·i .. k·i+k−1,
    whatever the sub-communicator's own numbering; a k past the world size is one node."""
    size = comm.Get_size()
    if size < 4:
        pytest.skip("needs four ranks")
    monkeypatch.setenv("HPCOLLS_NODE_SIZE", "2")
    odd_even = comm.Split(comm.Get_rank() % 2, comm.Get_rank())
    h = hierarchy.node_hierarchy(odd_even)
    try:
        assert h.nodes == [[r] for r in range(odd_even.Get_size())]  # world ranks 0, 2 (1, 3): nodes 0 and 1
    finally:
        h.free()
        odd_even.Free()
    h = _build(comm, monkeypatch, size + 1)
    try:
        assert h.nodes == [list(range(size))]
    finally:
        h.free()


def test_ranks_disagreeing_on_the_node_size_raise_on_every_rank(comm, monkeypatch):
    if comm.Get_size() < 2:
        pytest.skip("needs two ranks")
    with pytest.raises(ValueError, match="ranks disagree on their nodes"):
        _build(comm, monkeypatch, 1 if comm.Get_rank() == 0 else 2)


def test_reduction_order_reference(comm, seed):
    rng = np.random.default_rng(seed)
    per_rank = [rng.standard_normal(4096).astype(np.float32) * 10.0 ** rng.integers(-6, 6) for _ in range(8)]
    nodes = [[0, 2, 4, 6], [1, 3, 5, 7]]
    ref = hierarchy.reduce_in_hierarchy_order(dtypes.F32, dtypes.SUM, per_rank, nodes)
    by_hand = ((((per_rank[0] + per_rank[2]) + per_rank[4]) + per_rank[6])
               + (((per_rank[1] + per_rank[3]) + per_rank[5]) + per_rank[7]))
    assert np.array_equal(ref, by_hand)
    flat = hierarchy.reduce_in_hierarchy_order(dtypes.F32, dtypes.SUM, per_rank, [list(range(8))])
    assert not np.array_equal(ref, flat)   # float32 addition is not associative
    every = comm.allgather(ref.tobytes())
    assert every == [ref.tobytes()] * comm.Get_size()
