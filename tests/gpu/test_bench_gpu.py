"""python -m hpcolls.bench --graph on the GPU machine: rows whose calls can be captured are timed
from CUDA-graph replays, rows through MPI stay eager and say so, and every row's result is right
(out of place, the graph's own result is the one checked)."""
import json

import pytest
from mpi4py import MPI

from hpcolls import bench

pytest.importorskip("cupy")
WORLD = MPI.COMM_WORLD


def test_graph_timing_labels_and_checks_every_row(gpu, tmp_path_factory):
    path = WORLD.bcast(str(tmp_path_factory.mktemp("bench") / "bench.json") if WORLD.rank == 0 else None)
    # 8 B .. 2 MiB: the native kernels, whole and (past their limit, at several ranks on one GPU
    # or with a forced algorithm) in pieces; the mpi rows (host buffers) are timed eagerly.
    rc = bench.main(["--graph", "--min-bytes", "8", "--max-bytes", str(2 << 20), "--factor", "64",
                     "--reps", "3", "--warmup", "1", "--iters", "3", "--graph-calls", "10",
                     "--no-kernel-trace", "--json", path])
    assert rc == 0, "the bench counted wrong elements"
    if WORLD.rank != 0:
        return
    with open(path) as f:
        rows = json.load(f)["rows"]
    assert {r["bytes"] for r in rows} == {8, 512, 32 << 10, 2 << 20}
    assert all(r["wrong"] == 0 and r["median_us"] > 0 for r in rows)
    assert all(r["timing"] == "eager" for r in rows if r["algo"] == "mpi")
    native = [r for r in rows if r["algo"] in ("oneshot", "twoshot", "auto") and r["bytes"] <= 32 << 10]
    assert native and all(r["timing"] == "graph" for r in native), native
