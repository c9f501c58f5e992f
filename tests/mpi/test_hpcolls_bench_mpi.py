"""python -m hpcolls.bench on the CPU under mpiexec (MPI on host buffers: what runs without a
GPU): every collective's rows, nccl-tests' sizes and bus-bandwidth factors, every result checked,
and --plot from the same rows where matplotlib is installed (a clear error where it is not)."""
import json

import pytest

from hpcolls import bench


def test_every_collective_with_nccl_tests_columns(comm, tmp_path_factory):
    path = comm.bcast(str(tmp_path_factory.mktemp("bench") / "bench.json") if comm.rank == 0 else None)
    n = comm.size
    rc = bench.main(["--coll", "reduce_scatter,bcast,allreduce,allgather,reduce", "--min-bytes", "8",
                     "--max-bytes", "512", "--factor", "8", "--reps", "2", "--warmup", "0", "--iters", "2",
                     "--root", str(n - 1), "--json", path])
    assert rc == 0, "the bench counted wrong elements"
    if comm.rank != 0:
        return
    with open(path) as f:
        rows = json.load(f)["rows"]
    assert {r["coll"] for r in rows} == {"allreduce", "bcast", "reduce", "allgather", "reduce_scatter"}
    factor = {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
              "bcast": 1, "reduce": 1}
    for r in rows:
        assert r["wrong"] == 0 and r["algo"] == "mpi" and r["device_us"] is None and r["host_us"] > 0, r
        assert r["busbw_GBs"] == pytest.approx(r["algbw_GBs"] * factor[r["coll"]])
        assert r["algbw_GBs"] == pytest.approx(r["bytes"] / r["median_us"] / 1e3)
        assert r["root"] == (n - 1 if r["coll"] in ("bcast", "reduce") else -1)
        assert r["op"] == ("none" if r["coll"] in ("bcast", "allgather") else "sum")
        if r["coll"] in ("allgather", "reduce_scatter"):  # the size is n blocks of whole elements
            assert r["bytes"] % (8 * n) == 0
    assert not any(r["coll"] == "bcast" and r["inplace"] for r in rows)  # one buffer: no other place
    sizes = {r["bytes"] for r in rows if r["coll"] == "allreduce"}
    assert sizes == {8, 64, 512}


def test_plot_or_a_clear_error(comm, tmp_path_factory):
    where = comm.bcast(str(tmp_path_factory.mktemp("plot")) if comm.rank == 0 else None)
    argv = ["--coll", "bcast,allgather", "--max-bytes", "64", "--factor", "8", "--reps", "1", "--warmup", "0",
            "--iters", "1", "--plot", f"{where}/bench.png"]
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(SystemExit) as exit_:
            bench.main(argv)
        assert exit_.value.code == 2  # argparse's error, before anything runs
        return
    assert bench.main(argv) == 0
    if comm.rank == 0:
        with open(f"{where}/bench.png", "rb") as f:
            assert f.read(8) == b"\x89PNG\r\n\x1a\n"
