"""Array backend, device choice and the counted Collectives interface (one process)."""
import importlib.util

import numpy as np
import pytest
from mpi4py import MPI

from solvers.backend import Collectives, array_module, choose_kind, create_collectives, get_cupy
from solvers.backend.collectives import _HostStaged, _own_or_staged
from solvers.backend.device import resolve_device
from solvers.backend.threads import limit_blas_threads, share_cores
from solvers.distributed import ProcessGrid


@pytest.fixture
def grid():
    g = ProcessGrid(MPI.COMM_WORLD)
    yield g
    g.free()


def test_array_module_is_numpy_for_numpy():
    assert array_module(np.zeros(2)) is np


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="cupy is installed here")
def test_missing_cupy_names_the_extra():
    with pytest.raises(ImportError, match=r"hpcolls\[cu13\] \(cupy-cuda13x\)"):
        get_cupy()


def test_choose_kind():
    assert choose_kind("auto", "cpu")[0] == "mpi"
    assert choose_kind("auto", "gpu")[0] == "hpcolls"
    assert choose_kind("nccl", "gpu") == ("nccl", "requested")
    # A CPU run's host buffers go to MPI whatever was asked, and the reason says so.
    kind, why = choose_kind("nccl", "cpu")
    assert kind == "mpi" and "requested nccl" in why and "MPI" in why
    with pytest.raises(ValueError, match="collectives"):
        choose_kind("gloo", "cpu")


def test_resolve_device():
    assert resolve_device("cpu")[0] == "cpu" and resolve_device("gpu")[0] == "gpu"
    device, reason = resolve_device("auto")
    assert device in ("cpu", "gpu") and reason.startswith("auto")
    with pytest.raises(ValueError):
        resolve_device("tpu")


def test_counts_per_stage(grid):
    """Host-side calls are counted per (nested) stage. This process is the whole grid, so the
    array collectives are one-rank identities (tested below; counted ones in tests/mpi)."""
    coll = create_collectives(grid, "auto", np)
    assert coll.kind == "mpi"
    with coll.stage("one"):
        assert coll.bcast_obj({"k": 1}) == {"k": 1}
        with coll.stage("inner"):
            assert coll.any_flag(False) is False
            coll.note("answer", 42)
        assert coll.any_flag(True, scope="col") is True
    one, inner = coll.stats["one"], coll.stats["inner"]
    assert one.calls == 2 and one.bytes == 8
    assert one.by_op["allreduce_flag"][:2] == [1, 8] and one.by_op["bcast_obj"][:2] == [1, 0]
    assert inner.calls == 1 and inner.notes == {"answer": 42}
    assert one.wall_s >= inner.wall_s > 0
    coll.reset()
    assert coll.stats == {}


def test_one_rank_scopes_are_identity_and_uncounted(grid):
    """A 1 x 1 grid: every scope has one rank, so Allreduce / Bcast return the buffer as it is
    without reaching the transport (which here would fail if called) and count nothing."""
    coll = Collectives(grid)

    def transport_called(*args, **kwargs):
        raise AssertionError("a one-rank collective reached the transport")
    for ops in coll._dev.values():
        ops.update(Allreduce=transport_called, Bcast=transport_called)
    buf = np.random.default_rng().standard_normal((3, 4))
    expect = buf.copy()
    with coll.stage("alone"):
        for scope in ("all", "row", "col"):
            for op in ("sum", "max", "min"):
                assert coll.allreduce(buf, scope=scope, op=op) is buf
            assert coll.bcast(buf, root=0, scope=scope) is buf
    assert np.array_equal(buf, expect)
    assert coll.stats["alone"].calls == 0 and coll.stats["alone"].by_op == {}
    # Wrong arguments still fail as they would with a transport.
    with pytest.raises(ValueError, match="root 1"):
        coll.bcast(buf, root=1, scope="row")
    with pytest.raises(KeyError):
        coll.allreduce(buf, op="prod")
    with pytest.raises(ValueError, match="contiguous"):
        coll.bcast(buf[:, 1], root=0)


def test_rejects_non_contiguous_and_unknown_kind(grid):
    coll = Collectives(grid)
    with pytest.raises(ValueError, match="contiguous"):
        coll.allreduce(np.zeros((4, 4))[:, 1])
    with pytest.raises(ValueError, match="kind"):
        Collectives(grid, "carrier-pigeon")


class _Forwarding:
    """A wrapper that, like hpcolls.Communicator, forwards unknown attributes to mpi4py."""
    def __init__(self, comm):
        self._comm = comm

    def Allreduce(self, *args, **kwargs):
        return self._comm.Allreduce(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._comm, name)


def test_forwarded_device_ops_are_host_staged():
    comm = MPI.COMM_WORLD
    wrapper = _Forwarding(comm)
    assert _own_or_staged(wrapper, comm, "Allreduce", True) is wrapper
    assert isinstance(_own_or_staged(wrapper, comm, "Bcast", True), _HostStaged)
    # Host buffers may take any path mpi4py accepts: the wrapper's, forwarded.
    assert _own_or_staged(wrapper, comm, "Bcast", False) is wrapper


def test_blas_thread_limit():
    assert limit_blas_threads(1) >= 0
    assert "per rank" in share_cores(1) or "environment" in share_cores(1)
