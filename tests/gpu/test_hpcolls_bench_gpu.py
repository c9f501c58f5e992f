"""python -m hpcolls.bench on the GPU machine, every collective: rows whose calls can be captured
carry a device time from CUDA-graph replays, rows through MPI a host time only; every row's result
is right (out of place, the graph's own result is the one checked); hpcolls' rows say their route
and carry the targets' ratios (against the native Allreduce of the same size, the MPI routes
over them)."""
import json

import pytest
from mpi4py import MPI

from hpcolls import bench

pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD


def test_every_collective_every_algorithm(gpu, tmp_path_factory):
    path = WORLD.bcast(str(tmp_path_factory.mktemp("bench") / "bench.json") if WORLD.rank == 0 else None)
    # 64 B .. 2 MiB: the native kernels whole and, past their limit at several ranks on one GPU,
    # in pieces (or NCCL where every rank has its own GPU); the MPI rows are timed on the host.
    rc = bench.main(["--coll", "allreduce,bcast,reduce,allgather,reduce_scatter", "--min-bytes", "64",
                     "--max-bytes", str(2 << 20), "--factor", "32", "--algos", "auto,oneshot,nccl,mpi-device,mpi",
                     "--root", str(WORLD.size - 1), "--reps", "3", "--warmup", "1", "--iters", "3",
                     "--graph-calls", "10", "--no-kernel-trace", "--json", path])
    assert rc == 0, "the bench counted wrong elements"
    if WORLD.rank != 0:
        return
    with open(path) as f:
        found = json.load(f)
    rows = found["rows"]
    assert {r["coll"] for r in rows} == {"allreduce", "bcast", "reduce", "allgather", "reduce_scatter"}
    assert all(r["wrong"] == 0 and r["host_us"] > 0 for r in rows)
    assert all(r["device_us"] is None and r["timing"] == "host" for r in rows if r["algo"] in ("mpi", "mpi-device"))
    ours = [r for r in rows if r["algo"] == "auto"]
    assert ours and all(r["route"] in ("native", "pieces", "nccl") for r in ours), [r["route"] for r in ours]
    assert all(r["timing"] == "graph" and r["device_us"] > 0 for r in ours)
    assert all(r["mpi_device_over"] > 0 and r["mpi_host_over"] > 0 for r in ours)
    assert all(r["x_allreduce"] > 0 for r in ours if r["coll"] != "allreduce")
    assert not [r for r in rows if r["algo"] == "oneshot" and r["coll"] != "allreduce"]
    small = [r for r in ours if r["bytes"] <= 4096]
    assert small and all(r["route"] == "native" for r in small), small
    assert "host_us_per_call" in found
