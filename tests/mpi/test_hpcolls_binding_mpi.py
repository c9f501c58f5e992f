"""Node-local rank from the shared-memory split, checked against what the ranks know about each other.

Run with `mpiexec -n 2` and `-n 4`. On one host every rank shares the node, so the split must
number them 0..size-1 without gaps; across hosts, ranks on the same host must still be numbered
0..k-1 and the per-host counts must add up to the job.
"""
import socket
import sys

import pytest

import hpcolls

from hpcolls import binding, native_module


def test_split_numbers_the_ranks_of_each_host_without_gaps(comm):
    rank, size = binding.local_rank_and_size(comm)
    everyone = comm.allgather((socket.gethostname(), rank, size))
    hosts = {host for host, _, _ in everyone}
    for host in hosts:
        here = [(r, s) for h, r, s in everyone if h == host]
        assert sorted(r for r, _ in here) == list(range(len(here)))
        assert {s for _, s in here} == {len(here)}
    assert sum(len([1 for h, _, _ in everyone if h == host]) for host in hosts) == comm.Get_size()


def test_split_keeps_world_order_within_a_host(comm):
    # Split_type's key defaults to the rank, so local order follows world order: the mapping a
    # user expects when counting ranks per node by hand.
    rank, _ = binding.local_rank_and_size(comm)
    everyone = comm.allgather((socket.gethostname(), comm.Get_rank(), rank))
    mine = [(world, local) for host, world, local in everyone if host == socket.gethostname()]
    assert [local for _, local in sorted(mine)] == list(range(len(mine)))


def test_split_of_a_subcommunicator_is_local_to_it(comm):
    # Even and odd world ranks in separate communicators: each counts only its own ranks per host.
    sub = comm.Split(comm.Get_rank() % 2, comm.Get_rank())
    try:
        rank, size = binding.local_rank_and_size(sub)
        hosts = sub.allgather(socket.gethostname())
        assert size == hosts.count(socket.gethostname())
        assert rank == hosts[:sub.Get_rank()].count(socket.gethostname())
    finally:
        sub.Free()


def test_communicator_wins_over_contradicting_launcher_variables(comm, monkeypatch):
    # A stale SLURM_LOCALID=0 in every rank (mpirun inside an sbatch script) must not put every
    # rank on device 0 when the communicator knows better.
    for var in ("OMPI_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SLURM_LOCALID", "0")
    monkeypatch.setenv("SLURM_NTASKS_PER_NODE", "1")
    placement = binding.local_placement(comm)
    assert "split" in placement.source
    locals_on_host = comm.allgather((socket.gethostname(), placement.rank))
    mine = [r for h, r in locals_on_host if h == socket.gethostname()]
    assert sorted(mine) == list(range(len(mine)))


@pytest.fixture
def no_gpu_settings(monkeypatch):
    """No launcher hints that could pre-empt the split, no MPS, no cupy: binding decides alone."""
    for var in ("HPCOLLS_DEVICE", "HPCOLLS_ALLOW_GPU_SHARING", "SLURM_GPUS_PER_TASK", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", "/nonexistent/hpcolls-test-mps")
    monkeypatch.setitem(sys.modules, "cupy", None)
    return monkeypatch


def test_select_device_gives_each_rank_of_a_host_its_own_gpu(comm, no_gpu_settings):
    _, size = binding.local_rank_and_size(comm)
    no_gpu_settings.setattr(native_module, "device_count", lambda: size)
    device = binding.select_device(comm)
    on_host = [d for h, d in comm.allgather((socket.gethostname(), device)) if h == socket.gethostname()]
    assert sorted(on_host) == list(range(size))


def test_select_device_refuses_on_every_rank_when_ranks_outnumber_gpus(comm, no_gpu_settings):
    _, size = binding.local_rank_and_size(comm)
    no_gpu_settings.setattr(native_module, "device_count", lambda: 1)
    if size == 1:
        assert binding.select_device(comm) == 0
        return
    # Every rank must raise: one rank going on alone would wait forever in its next collective.
    with pytest.raises(hpcolls.HpcollsError, match="MPS"):
        binding.select_device(comm)


def test_ranks_that_each_see_their_own_single_gpu_are_not_sharing(comm, no_gpu_settings):
    # A per-rank CUDA_VISIBLE_DEVICES: one GPU visible everywhere, a different one in each rank.
    no_gpu_settings.setattr(native_module, "device_count", lambda: 1)
    no_gpu_settings.setattr(binding, "_gpu_identity", lambda index=0: f"GPU-{comm.Get_rank()}")
    assert binding.select_device(comm) == 0


def test_ranks_that_see_the_same_single_gpu_are_sharing(comm, no_gpu_settings):
    no_gpu_settings.setattr(native_module, "device_count", lambda: 1)
    no_gpu_settings.setattr(binding, "_gpu_identity", lambda index=0: "GPU-same")
    no_gpu_settings.setenv("SLURM_GPUS_PER_TASK", "1")  # what Slurm asked for is not what happened
    if binding.local_rank_and_size(comm)[1] == 1:
        assert binding.select_device(comm) == 0
        return
    with pytest.raises(hpcolls.HpcollsError, match="MPS"):
        binding.select_device(comm)


def test_a_subcommunicator_sizes_its_kernels_for_every_rank_bound_to_its_gpu(comm, monkeypatch):
    """A process grid's row communicator of 2 ranks, its GPU shared by all the job's ranks: the
    native path's kernels are sized for all of them (what select_device bound), not for 2; the
    same number on every rank, and the communicator's own count where nothing was bound."""
    from hpcolls.peer_group import ranks_sharing_gpu
    if comm.Get_size() < 2:
        pytest.skip("needs two ranks")
    row = comm.Split(comm.Get_rank() // 2, comm.Get_rank())
    try:
        monkeypatch.setattr(binding, "_bound_sharing", None)
        assert ranks_sharing_gpu(row, "GPU-0") == row.Get_size()
        monkeypatch.setattr(binding, "_bound_sharing", comm.Get_size())
        assert ranks_sharing_gpu(row, "GPU-0") == max(comm.Get_size(), row.Get_size())
        # One GPU per rank (different identities): one each, unless a rank was told otherwise.
        monkeypatch.setattr(binding, "_bound_sharing", 1)
        assert ranks_sharing_gpu(row, f"GPU-{comm.Get_rank()}") == 1
        monkeypatch.setattr(binding, "_bound_sharing", 3 if row.Get_rank() == 0 else 1)
        assert ranks_sharing_gpu(row, f"GPU-{comm.Get_rank()}") == 3
    finally:
        row.Free()
