"""python -m solvers.bench on the CPU under mpiexec: it solves, checks the eigenvalues against the
known spectrum, writes JSON, and says for each GPU peer why it does not run here."""
import json

from solvers import bench


def test_cpu_run_reports_its_solve_and_why_no_peer_runs(comm, tmp_path_factory, capsys):
    path = comm.bcast(str(tmp_path_factory.mktemp("bench") / "bench.json") if comm.rank == 0 else None)
    assert bench.main(["--device", "cpu", "--n", "45", "70", "--nb", "16", "--repeat", "1", "--warmup", "0",
                       "--json", path]) == 0
    out = capsys.readouterr().out
    if comm.rank != 0:
        assert out == ""  # one header and one report, from rank 0
        return
    assert "no cuSOLVER (it runs on one-rank GPU runs)" in out
    assert "no cuSOLVERMp (a CPU run)" in out
    with open(path) as f:
        rows = json.load(f)["rows"]
    assert [r["n"] for r in rows] == [45, 70]
    for r in rows:
        assert r["ranks"] == comm.size and r["nb"] == 16
        assert r["ours_max_eig_err"] < 1e-10, r
        assert "cusolver_median_s" not in r and "cusolvermp_median_s" not in r
        assert set(r["ours_stages_s"]) >= {"potrf", "sygst", "sytrd", "tridiagonal", "ormtr", "trsm"}
