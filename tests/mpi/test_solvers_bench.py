"""python -m solvers.bench on the CPU under mpiexec: it solves, checks the eigenvalues against the
known spectrum, writes JSON, and says for each GPU peer why it does not run here."""
import json

from solvers.bench import sygvd as bench


def test_cpu_run_reports_its_solve_and_why_no_peer_runs(comm, tmp_path_factory, capsys):
    path = comm.bcast(str(tmp_path_factory.mktemp("bench") / "bench.json") if comm.rank == 0 else None)
    assert bench.main(["--device", "cpu", "--n", "45", "70", "--nb", "16", "--repeat", "1", "--warmup", "0",
                       "--memory", "--json", path]) == 0
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
        assert set(r["ours_stages_s"]) >= {"potrf", "sygst", "sytrd", "stedc", "ormtr", "trsm"}
        assert r["stage_peaks"].startswith("host: validate ") and "sytrd " in r["stage_peaks"]
    assert out.count("live memory per stage above the inputs") == 2


def test_complex_rows_by_method(comm, capsys):
    """complex128 (hegvd): the distributed stages' LAPACK names, and the single method's one stage."""
    assert bench.main(["--device", "cpu", "--n", "33", "--nb", "8", "--repeat", "1", "--warmup", "0",
                       "--dtype", "complex128", "--method", "distributed", "single"]) == 0
    out = capsys.readouterr().out
    if comm.rank == 0:
        assert "method distributed" in out and "method single" in out
        assert "hetrd" in out and "unmtr" in out and "hegvd" in out
        errors = [float(part.split()[0]) for part in out.split("max |λ-λ_exact| ")[1:]]
        assert len(errors) == 2 and max(errors) < 1e-10, out


def test_cpu_vs_scipy_mode(comm, tmp_path_factory, capsys):
    path = comm.bcast(str(tmp_path_factory.mktemp("vs") / "vs.json") if comm.rank == 0 else None)
    assert bench.main(["--cpu-vs-scipy", "--n", "20", "50", "--repeat", "2", "--warmup", "0",
                       "--dtype", "complex64", "--method", "auto", "distributed", "--json", path]) == 0
    capsys.readouterr()
    if comm.rank != 0:
        return
    with open(path) as f:
        rows = json.load(f)["rows"]
    assert [(r["n"], r["method"]) for r in rows] == [(20, "auto"), (20, "distributed"), (50, "auto"), (50, "distributed")]
    for r in rows:
        assert r["ranks"] == comm.size and r["eigh_median_s"] > 0 and r["scipy_median_s"] > 0
        assert r["max_eig_diff"] < 1e-3, r


def test_subset_and_factored_rows(comm, tmp_path_factory, capsys):
    """--lowest / --range solve the subset (its exact eigenvalues checked), --factored adds the
    solves against a factor of B; the memory high-water marks are reported."""
    path = comm.bcast(str(tmp_path_factory.mktemp("bench") / "subset.json") if comm.rank == 0 else None)
    for selection in (["--lowest", "0.05"], ["--range", "V:-0.5:0.5"]):
        assert bench.main(["--device", "cpu", "--n", "60", "--nb", "8", "--repeat", "1", "--warmup", "0",
                           "--factored", "--json", path, *selection]) == 0
        out = capsys.readouterr().out
        if comm.rank != 0:
            continue
        with open(path) as f:
            row, = json.load(f)["rows"]
        # A twentieth of n by bisection + MRRR, half of it by divide and conquer (stevr.py).
        solved_by = "stemr" if selection[0] == "--lowest" else "stedc"
        assert {"stebz", solved_by} <= set(row["ours_stages_s"]), row["ours_stages_s"]
        assert row["ours_max_eig_err"] < 1e-10 and "factored B" in out
        assert row["factored_median_s"] > 0 and row["potrf_s"] > 0 and row["max_rank_host_peak_bytes"] > 0
        if selection[0] == "--lowest":
            assert row["range"] == "I:1:3" and row["eigenpairs"] == 3
        assert "no cuSOLVERMp (its sygvd has no subsets)" in out


def test_reduction_rows(comm, tmp_path_factory, capsys):
    """--reduction 1stage 2stage: one row each, the two-stage stages and sy2sb's TFLOP/s."""
    out, rows = _bench_rows(comm, tmp_path_factory, capsys, ["--n", "50", "--band", "4",
                                                             "--reduction", "1stage", "2stage"])
    if rows is None:
        return
    assert [r["reduction"] for r in rows] == ["1stage", "2stage"]
    assert {"sytrd", "ormtr"} <= set(rows[0]["ours_stages_s"]) and rows[0]["sy2sb_tflops"] is None
    assert {"sy2sb", "sb2st", "ormtr_sb2st", "ormtr_sy2sb"} <= set(rows[1]["ours_stages_s"])
    assert rows[1]["sy2sb_tflops"] > 0 and "sy2sb achieved" in out
    assert max(r["ours_max_eig_err"] for r in rows) < 1e-10


def test_several_ranges_give_a_row_each_and_the_subsets_saving(comm, tmp_path_factory, capsys):
    """--range A I:1:3 --lowest 0.2: three rows in one run (all, then the subsets), and for each
    subset what it saves of the full solve's tridiagonal solve and back-transformations."""
    out, rows = _bench_rows(comm, tmp_path_factory, capsys, ["--n", "60", "--range", "A", "I:1:3",
                                                             "--lowest", "0.2"])
    if rows is None:
        return
    assert [(r["range"], r["eigenpairs"]) for r in rows] == [("A", 60), ("I:1:3", 3), ("I:1:12", 12)]
    assert all(r["ours_max_eig_err"] < 1e-10 for r in rows)
    assert "stedc" in rows[0]["ours_stages_s"] and "stemr" in rows[1]["ours_stages_s"]
    assert out.count("against all, method distributed, reduction auto") == 2, out
    assert out.count("% saved (tridiagonal ") == 2 and out.count("s (") >= 2, out
    assert all(r["saving_after_reduction"] < 1 for r in rows[1:])


def test_tridiagonal_option_reaches_the_stage(comm, tmp_path_factory, capsys):
    """--tridiagonal replicated: every rank solves the whole tridiagonal problem (the stage's
    note), said in the header and kept in the rows."""
    out, rows = _bench_rows(comm, tmp_path_factory, capsys, ["--n", "40", "--tridiagonal", "replicated"])
    if rows is None:
        return
    assert "tridiagonal replicated" in out and rows[0]["tridiagonal"] == "replicated"
    assert "divide and conquer, whole on every rank" in rows[0]["ours_stage_table"], rows[0]["ours_stage_table"]


def _bench_rows(comm, tmp_path_factory, capsys, argv):
    """(printed output, JSON rows on rank 0 / None elsewhere) of one CPU bench run at nb 8, one
    timed solve, no warm-up, with ``argv`` added."""
    path = comm.bcast(str(tmp_path_factory.mktemp("bench") / "rows.json") if comm.rank == 0 else None)
    assert bench.main(["--device", "cpu", "--nb", "8", "--repeat", "1", "--warmup", "0",
                       "--json", path, *argv]) == 0
    out = capsys.readouterr().out
    if comm.rank != 0:
        return out, None
    with open(path) as f:
        return out, json.load(f)["rows"]


def test_the_tridiagonal_stage_alone(comm, capsys):
    """python -m solvers.bench.tridiagonal: all, the lowest tenth by divide and conquer and by
    MRRR, and the eigenvalues alone by host dsterf and by multisection, each with its median,
    samples and its time as a share of all's."""
    from solvers.bench import tridiagonal as bench_tridiagonal
    assert bench_tridiagonal.main(["--device", "cpu", "--n", "64", "--lowest", "0.1", "0.5", "--mrrr", "--sterf",
                                   "--multisection", "--repeat", "2", "--warmup", "0", "--nb", "8"]) == 0
    out = capsys.readouterr().out
    if comm.rank != 0:
        assert out == ""
        return
    line = out.splitlines()[-1]
    assert line.startswith(f"n=64 P={comm.size} (load average "), out
    for name in ("all", "multisection", "sterf (host)", "D&C I:1:7", "MRRR I:1:7", "D&C I:1:32", "MRRR I:1:32"):
        assert f"; {name} " in line or line.split(": ", 1)[1].startswith(name), (name, line)
    assert line.count(" × all)") == 6 and line.count("[") == 7, line


def test_a_small_untimed_solve_comes_first(comm, monkeypatch, capsys):
    """_prime: one solve of order min(n, PRIME_ORDER) before any timed one, even with --warmup 0
    (a process's first use of a GPU kernel loads it: a large n's single sample would time it)."""
    orders, real = [], bench.sygvd

    def recording(a, *args, **kwargs):
        orders.append(a.shape[0])
        return real(a, *args, **kwargs)

    monkeypatch.setattr(bench, "sygvd", recording)
    monkeypatch.setattr(bench, "PRIME_ORDER", 20)
    assert bench.main(["--device", "cpu", "--n", "30", "50", "--nb", "8", "--repeat", "1", "--warmup", "0",
                       "--method", "distributed"]) == 0
    capsys.readouterr()
    assert orders == [20, 30, 50]


def test_the_untimed_solve_takes_an_index_range_as_its_share(comm, monkeypatch, capsys):
    """_prime at an order below the rows': --range I:il:iu becomes the same share of its spectrum
    (the rows' own bounds are no range there: I:1:1638 at order 1024 stopped a GPU run); a value
    range and --lowest stay as they are."""
    solves, real = [], bench.sygvd

    def recording(a, *args, **kwargs):
        solves.append((a.shape[0], str(kwargs["subset"])))
        return real(a, *args, **kwargs)

    monkeypatch.setattr(bench, "sygvd", recording)
    monkeypatch.setattr(bench, "PRIME_ORDER", 20)
    assert bench.main(["--device", "cpu", "--n", "40", "--nb", "8", "--repeat", "1", "--warmup", "0",
                       "--range", "I:25:40", "V:-0.5:0.5", "--lowest", "0.1"]) == 0
    capsys.readouterr()
    assert solves == [(20, "I:13:20"), (20, "V:-0.5:0.5"), (20, "I:1:2"),
                      (40, "I:25:40"), (40, "V:-0.5:0.5"), (40, "I:1:4")], solves
