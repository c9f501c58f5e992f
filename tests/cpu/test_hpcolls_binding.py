"""Rank → GPU binding: the decision table, its errors, and which launcher variable wins."""
import os
import sys
import types

import pytest

import hpcolls
from hpcolls import binding, log, native_module


@pytest.mark.parametrize("rank,size,ndev,mps,allow,expected", [
    (0, 1, 1, False, False, 0),
    (3, 4, 4, False, False, 3),
    (1, 2, 8, False, False, 1),  # fewer ranks than GPUs: the first ones, in order
    (5, 8, 4, True, False, 1),  # MPS: round-robin, two ranks per GPU
    (2, 3, 2, True, False, 0),  # uneven sharing is allowed too
    (3, 4, 1, False, True, 0),  # consent without MPS
    (4, None, 8, False, False, 4),  # unknown size: at least rank+1 ranks, which fit
])
def test_choose_device_table(rank, size, ndev, mps, allow, expected):
    assert binding.choose_device(rank, size, ndev, mps, allow) == expected


@pytest.mark.parametrize("rank,size,ndev", [(0, 2, 1), (4, 8, 4), (8, None, 8)])
def test_oversubscription_without_mps_is_refused_with_every_way_out(rank, size, ndev):
    with pytest.raises(RuntimeError) as err:
        binding.choose_device(rank, size, ndev, mps_active=False, allow_oversubscribe=False)
    assert isinstance(err.value, hpcolls.HpcollsError)
    message = str(err.value)
    assert "MPS" in message and "nvidia-cuda-mps-control" in message
    assert f"at most {ndev} rank" in message
    assert "HPCOLLS_ALLOW_GPU_SHARING=1" in message


@pytest.mark.parametrize("rank,size,ndev", [(0, 1, 0), (2, 2, 4), (-1, 2, 2)])
def test_choose_device_rejects_nonsense(rank, size, ndev):
    with pytest.raises(ValueError):
        binding.choose_device(rank, size, ndev, True, True)


def test_every_gpu_gets_an_even_share_under_mps():
    devices = [binding.choose_device(r, 10, 4, True, False) for r in range(10)]
    counts = [devices.count(d) for d in range(4)]
    assert max(counts) - min(counts) <= 1 and sum(counts) == 10


@pytest.mark.parametrize("env,expected", [
    ({"OMPI_COMM_WORLD_LOCAL_RANK": "2", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, (2, 4, "OMPI_COMM_WORLD_LOCAL_RANK")),
    ({"MV2_COMM_WORLD_LOCAL_RANK": "1", "MV2_COMM_WORLD_LOCAL_SIZE": "3"}, (1, 3, "MV2_COMM_WORLD_LOCAL_RANK")),
    ({"PMI_LOCAL_RANK": "5", "PMI_LOCAL_SIZE": "8"}, (5, 8, "PMI_LOCAL_RANK")),
    ({"PMI_LOCAL_RANK": "5"}, (5, None, "PMI_LOCAL_RANK")),
    ({"SLURM_LOCALID": "3", "SLURM_NTASKS_PER_NODE": "4"}, (3, 4, "SLURM_LOCALID")),
    # No --ntasks-per-node: the compressed list, indexed by this node's id.
    ({"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "4(x2),3", "SLURM_NODEID": "2"}, (1, 3, "SLURM_LOCALID")),
    ({"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "4(x2),3", "SLURM_NODEID": "1"}, (1, 4, "SLURM_LOCALID")),
    ({"SLURM_LOCALID": "0", "SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_TASKS_PER_NODE": "8",
      "SLURM_NODEID": "0"}, (0, 2, "SLURM_LOCALID")),
    ({"SLURM_LOCALID": "0"}, (0, None, "SLURM_LOCALID")),
    ({"SLURM_PROCID": "7"}, None),  # a global rank says nothing about the node
    ({}, None),
])
def test_placement_from_env(env, expected):
    assert binding.placement_from_env(env) == (None if expected is None else binding.LocalPlacement(*expected))


def test_launcher_variables_beat_slurm_batch_step_leftovers():
    # mpirun inside an sbatch script: every rank inherits the batch step's SLURM_LOCALID=0.
    env = {"SLURM_LOCALID": "0", "SLURM_NTASKS_PER_NODE": "1",
           "OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    assert binding.placement_from_env(env) == (3, 4, "OMPI_COMM_WORLD_LOCAL_RANK")


class _FakeNodeComm:
    def __init__(self, rank, size, peers):
        self.rank, self.size, self.peers, self.freed = rank, size, peers, False
        self.gathered = []

    def allgather(self, value):
        self.gathered.append(value)
        if self.peers is not None:
            return self.peers
        return [value if r == self.rank else None for r in range(self.size)]

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.size

    def Free(self):
        self.freed = True


class _FakeComm:
    """Enough of an mpi4py communicator for the split, and a record of what was asked."""

    def __init__(self, rank, size, peers=None):
        self.node = _FakeNodeComm(rank, size, peers)
        self.split_types = []

    def Split_type(self, split_type, key=0, info=None):
        self.split_types.append(split_type)
        return self.node


def test_a_given_communicator_wins_over_the_environment_and_the_disagreement_is_logged(monkeypatch, capsys):
    from mpi4py import MPI
    monkeypatch.setattr(log, "level", log.LEVELS["WARN"])
    comm = _FakeComm(1, 2)
    env = {"OMPI_COMM_WORLD_LOCAL_RANK": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    placement = binding.local_placement(comm, env)
    assert (placement.rank, placement.size) == (1, 2) and "split" in placement.source
    assert comm.split_types == [MPI.COMM_TYPE_SHARED] and comm.node.freed
    err = capsys.readouterr().err
    assert "OMPI_COMM_WORLD_LOCAL_RANK says local rank 3 of 4" in err and "1 of 2" in err


def test_a_mere_renumbering_is_noted_not_warned(monkeypatch, capsys):
    env = {"OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}
    monkeypatch.setattr(log, "level", log.LEVELS["WARN"])
    assert binding.local_rank_and_size(_FakeComm(2, 4), env) == (2, 4)
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(log, "level", log.LEVELS["INFO"])
    binding.local_rank_and_size(_FakeComm(2, 4), env)
    assert "hpcolls INFO binding: OMPI_COMM_WORLD_LOCAL_RANK says local rank 1 of 4" in capsys.readouterr().err


def test_agreeing_environment_is_not_warned_about(monkeypatch, capsys):
    monkeypatch.setattr(log, "level", log.LEVELS["WARN"])
    env = {"SLURM_LOCALID": "1", "SLURM_NTASKS_PER_NODE": "2"}
    assert binding.local_rank_and_size(_FakeComm(1, 2), env) == (1, 2)
    assert capsys.readouterr().err == ""


def test_without_comm_or_launcher_a_lone_process_is_assumed(monkeypatch):
    # Simulate "mpi4py never imported": nothing must initialise MPI behind the caller's back.
    monkeypatch.delitem(sys.modules, "mpi4py.MPI", raising=False)
    assert binding.local_rank_and_size(None, {}) == (0, 1)
    assert "mpi4py.MPI" not in sys.modules


def _make_pipe_dir(path):
    path.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path / "control")
    return str(path)


def test_mps_detection(tmp_path):
    default = tmp_path / "default"
    custom = tmp_path / "custom"
    assert not binding.mps_active({}, default_pipe_directory=str(default))
    _make_pipe_dir(default)
    assert binding.mps_active({}, default_pipe_directory=str(default))
    # A set CUDA_MPS_PIPE_DIRECTORY is the only place the client looks.
    assert not binding.mps_active({"CUDA_MPS_PIPE_DIRECTORY": str(custom)}, default_pipe_directory=str(default))
    _make_pipe_dir(custom)
    assert binding.mps_active({"CUDA_MPS_PIPE_DIRECTORY": str(custom)}, default_pipe_directory=str(tmp_path / "none"))


@pytest.mark.parametrize("ndev,size,env,peers,expected", [
    (1, 4, {"SLURM_GPUS_PER_TASK": "1"}, None, True),
    (1, 1, {}, None, True),
    (1, 4, {}, None, False),  # four ranks really on one GPU
    (4, 4, {"SLURM_GPUS_PER_TASK": "1"}, None, False),  # not isolated after all: bind by local rank
    (1, 4, {"SLURM_GPUS_PER_TASK": "2"}, None, False),
    # What the ranks see decides, whatever Slurm says: CUDA_VISIBLE_DEVICES set per rank by a wrapper...
    (1, 3, {}, ["GPU-a", "GPU-b", "GPU-c"], True),
    # ... or --gpus-per-task=1 that the site does not isolate, all tasks on one GPU.
    (1, 3, {"SLURM_GPUS_PER_TASK": "1"}, ["GPU-a", "GPU-a", "GPU-a"], False),
    (1, 3, {}, ["GPU-a", "GPU-b", "GPU-a"], False),
    (1, 2, {"SLURM_GPUS_PER_TASK": "1"}, ["GPU-a", None], True),  # a rank that cannot tell: Slurm's word
])
def test_one_gpu_per_task(ndev, size, env, peers, expected):
    assert binding.one_gpu_per_task(ndev, size, env, peers) is expected


# --- select_device: the facts are faked, the decision and the log are real ---------------------

_BINDING_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_RANK",
                 "MV2_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_LOCAL_RANK",
                 "PMI_LOCAL_SIZE", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
                 "SLURM_STEP_TASKS_PER_NODE", "SLURM_NODEID", "SLURM_GPUS_PER_TASK", "CUDA_VISIBLE_DEVICES",
                 "CUDA_MPS_PIPE_DIRECTORY", "HPCOLLS_DEVICE", "HPCOLLS_ALLOW_GPU_SHARING")


@pytest.fixture
def node(monkeypatch, tmp_path):
    """A clean launcher environment, a fake device count and a fake cupy that records `use()`."""
    for var in _BINDING_VARS:
        monkeypatch.delenv(var, raising=False)
    # Point MPS at an empty directory so a daemon on the test machine cannot leak in.
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path / "mps"))
    monkeypatch.setattr(log, "level", log.LEVELS["INFO"])
    monkeypatch.setattr(binding, "_bound_sharing", None)
    state = types.SimpleNamespace(ndev=0, cupy_ndev=0, used=[], mps_dir=tmp_path / "mps", bus_id="0000:19:00.0")
    monkeypatch.setattr(native_module, "device_count", lambda: state.ndev)
    monkeypatch.setitem(sys.modules, "hpcolls._native", None)  # identity through cupy, below
    cupy = types.ModuleType("cupy")
    cupy.cuda = types.SimpleNamespace(
        Device=lambda d: types.SimpleNamespace(use=lambda: state.used.append(d), pci_bus_id=state.bus_id),
        runtime=types.SimpleNamespace(getDeviceCount=lambda: state.cupy_ndev))
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return state


def test_select_device_without_gpu_returns_none(node, capsys):
    assert binding.select_device() is None
    assert node.used == [] and "running on the host" in capsys.readouterr().err


def test_select_device_counts_gpus_through_cupy_when_the_native_module_sees_none(node, monkeypatch):
    node.cupy_ndev = 2  # native module not built: hpcolls.device_count() says 0
    monkeypatch.setenv("SLURM_LOCALID", "1")
    monkeypatch.setenv("SLURM_NTASKS_PER_NODE", "2")
    assert binding.select_device() == 1 and node.used == [1]


def test_select_device_binds_by_local_rank_and_logs_why(node, monkeypatch, capsys):
    node.ndev = 4
    monkeypatch.setenv("SLURM_LOCALID", "2")
    monkeypatch.setenv("SLURM_NTASKS_PER_NODE", "4")
    assert binding.select_device() == 2 and node.used == [2]
    err = capsys.readouterr().err
    assert "local rank 2 of 4 (from SLURM_LOCALID)" in err and "device 2" in err


def test_select_device_prefers_the_communicator_split(node, monkeypatch):
    node.ndev = 4
    monkeypatch.setenv("SLURM_LOCALID", "0")
    monkeypatch.setenv("SLURM_NTASKS_PER_NODE", "1")
    assert binding.select_device(_FakeComm(3, 4)) == 3


def test_select_device_one_gpu_per_task(node, monkeypatch, capsys):
    node.ndev = 1
    monkeypatch.setenv("SLURM_LOCALID", "3")
    monkeypatch.setenv("SLURM_NTASKS_PER_NODE", "4")
    monkeypatch.setenv("SLURM_GPUS_PER_TASK", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert binding.select_device() == 0
    assert "one GPU per task" in capsys.readouterr().err


def test_select_device_asks_the_node_which_gpu_each_rank_sees(node, monkeypatch):
    node.ndev = 1
    # Each rank's wrapper exported its own CUDA_VISIBLE_DEVICES; Slurm says nothing about it.
    comm = _FakeComm(2, 4, peers=["0000:19:00.0", "0000:3b:00.0", "0000:4c:00.0", "0000:5d:00.0"])
    assert binding.select_device(comm) == 0
    assert comm.node.gathered == ["0000:19:00.0"]  # what this rank sees went to the others
    with pytest.raises(hpcolls.HpcollsError, match="4 ranks on this node but only 1 GPU"):
        binding.select_device(_FakeComm(2, 4, peers=["0000:19:00.0"] * 4))


def test_select_device_joins_the_node_gather_even_with_nothing_to_say(node):
    node.ndev = 4  # no identity needed, but the other ranks may still be gathering
    comm = _FakeComm(1, 4)
    assert binding.select_device(comm) == 1
    assert comm.node.gathered == [None]


def test_select_device_refuses_sharing_without_mps_then_accepts_mps_or_consent(node, monkeypatch, capsys):
    node.ndev = 1
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    with pytest.raises(RuntimeError, match="HPCOLLS_ALLOW_GPU_SHARING"):
        binding.select_device()
    assert node.used == []
    _make_pipe_dir(node.mps_dir)
    assert binding.select_device() == 0
    assert "under MPS" in capsys.readouterr().err
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(node.mps_dir / "elsewhere"))
    monkeypatch.setenv("HPCOLLS_ALLOW_GPU_SHARING", "1")
    assert binding.select_device() == 0
    assert "without MPS" in capsys.readouterr().err


def test_hpcolls_device_overrides_everything(node, monkeypatch, capsys):
    node.ndev = 4
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_RANK", "6")  # would be refused: 8 ranks, 4 GPUs, no MPS
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "8")
    monkeypatch.setenv("HPCOLLS_DEVICE", "3")
    assert binding.select_device() == 3 and node.used == [3]
    assert "HPCOLLS_DEVICE is set" in capsys.readouterr().err


@pytest.mark.parametrize("value,ndev", [("4", 4), ("gpu1", 4), ("0", 0)])
def test_bad_hpcolls_device_is_an_error(node, monkeypatch, value, ndev):
    node.ndev = ndev
    monkeypatch.setenv("HPCOLLS_DEVICE", value)
    with pytest.raises(RuntimeError, match="HPCOLLS_DEVICE"):
        binding.select_device()


def test_select_device_without_cupy_still_returns_the_index(node, monkeypatch, capsys):
    node.ndev = 2
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    monkeypatch.setenv("PMI_LOCAL_RANK", "1")
    monkeypatch.setenv("PMI_LOCAL_SIZE", "2")
    assert binding.select_device() == 1
    assert "cupy not installed" in capsys.readouterr().err


def test_select_device_remembers_how_many_ranks_it_bound_to_this_gpu(node, monkeypatch):
    """What a row or column communicator's native path sizes its kernels by (peer_group.ranks_sharing_gpu):
    every rank of the node bound to this GPU, not just the communicator's."""
    _make_pipe_dir(node.mps_dir)  # ranks may share a GPU: MPS is up
    node.ndev = 2
    assert binding.select_device(_FakeComm(3, 5)) == 1
    assert binding.ranks_bound_to_this_gpu() == 2  # local ranks 1 and 3 of 0..4 on device 1
    assert binding.select_device(_FakeComm(2, 5)) == 0
    assert binding.ranks_bound_to_this_gpu() == 3  # 0, 2, 4
    node.ndev = 1
    monkeypatch.setenv("SLURM_GPUS_PER_TASK", "1")
    assert binding.select_device(_FakeComm(2, 4, peers=["GPU-a", "GPU-b", "GPU-c", "GPU-d"])) == 0
    assert binding.ranks_bound_to_this_gpu() == 1  # one GPU per task
    monkeypatch.setenv("HPCOLLS_DEVICE", "0")
    binding.select_device(_FakeComm(2, 4, peers=["GPU-a"] * 4))
    assert binding.ranks_bound_to_this_gpu() is None  # forced: other ranks may have forced it too
