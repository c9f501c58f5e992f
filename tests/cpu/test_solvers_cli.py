"""The command line: argument parsing, --help, and end-to-end runs under mpiexec (subprocess)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from solvers.cli.main import parse_args
from solvers.problems import random_symmetric, spd_with_condition
from solver_testing import not_positive_definite, shared_seed, with_junk
from mpi_tools import mpi_tool

REPO = Path(__file__).resolve().parents[2]


def _mpiexec():
    return mpi_tool("mpiexec")


def run_cli(args, ranks=2, timeout=120):
    """Run ``python -m solvers.sygvd`` under mpiexec; returns the CompletedProcess."""
    launcher = _mpiexec()
    if launcher is None:
        pytest.skip("mpiexec not found")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    cmd = [launcher, "--allow-run-as-root", "--oversubscribe", "-n", str(ranks),
           sys.executable, "-m", "solvers.sygvd", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)


def test_defaults():
    args = parse_args([])
    assert (args.n, args.nb, args.grid, args.dtype, args.itype, args.jobz, args.uplo) == \
        (512, None, None, "float64", 1, "V", "L")
    assert (args.device, args.collectives, args.check, args.repeat, args.input) == \
        ("auto", "auto", False, 1, None)


def test_every_flag_parses():
    args = parse_args(["--n", "100", "--nb", "8", "--grid", "2x3", "--dtype", "float32",
                       "--itype", "3", "--jobz", "n", "--uplo", "u", "--input", "a.npy", "b.mtx",
                       "--output", "o.npz", "--device", "cpu", "--collectives", "mpi",
                       "--check", "--repeat", "3", "--seed", "7", "--method", "single"])
    assert (args.n, args.nb, args.grid, args.dtype, args.itype) == (100, 8, (2, 3), "float32", 3)
    assert (args.jobz, args.uplo, args.input, args.output) == ("N", "U", ["a.npy", "b.mtx"], "o.npz")
    assert (args.device, args.collectives, args.check, args.repeat, args.seed) == ("cpu", "mpi", True, 3, 7)
    assert args.method == "single" and args.reduction == "auto" and args.band is None
    assert parse_args(["--reduction", "2stage", "--band", "4"]).reduction == "2stage"
    for dtype in ("complex64", "complex128"):
        assert parse_args(["--dtype", dtype]).dtype == dtype


@pytest.mark.parametrize("bad", [["--grid", "2by2"], ["--itype", "4"], ["--n", "0"], ["--nb", "-1"],
                                 ["--dtype", "float16"], ["--collectives", "gloo"], ["--jobz", "X"],
                                 ["--reduction", "3stage"], ["--band", "0"]])
def test_bad_flags_exit_2(bad, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(bad)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


def test_help_explains_every_flag():
    out = subprocess.run([sys.executable, "-m", "solvers.sygvd", "--help"], capture_output=True,
                         text=True, timeout=60, cwd=REPO,
                         env=dict(os.environ, PYTHONPATH=str(REPO))).stdout
    for flag in ("--n", "--nb", "--grid", "--dtype", "--itype", "--jobz", "--uplo", "--input",
                 "--output", "--device", "--collectives", "--check", "--repeat", "--seed", "--method",
                 "--reduction", "--band"):
        assert flag in out
    assert "known spectrum" in out.lower() or "KNOWN spectrum" in out


def test_default_problem_check_passes_and_reports():
    res = run_cli(["--n", "96", "--nb", "16", "--check", "--itype", "2", "--uplo", "U", "--method", "distributed"])
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    for needle in ("known eigenvalues", "grid", "collectives", "numpy", "mpi4py", "sytrd",
                   "host_us_per_column", "check residual", "check orthogonality", "PASS"):
        assert needle in out, out
    err = float(out.split("max |λ - λ_exact| = ")[1].split()[0])
    assert err < 1e-12, out
    assert out.count("PASS") == 2 and "FAIL" not in out


def test_files_in_results_out_match_scipy(tmp_path):
    seed = shared_seed()
    rng = np.random.default_rng(seed)
    n = 40
    a, b = random_symmetric(rng, n), spd_with_condition(rng, n, 100.0)
    np.save(tmp_path / "a.npy", a)
    import scipy.io
    scipy.io.mmwrite(str(tmp_path / "b.mtx"), b, symmetry="symmetric")
    out = tmp_path / "out.npz"
    out.write_bytes(b"poison: must be overwritten")
    res = run_cli(["--input", str(tmp_path / "a.npy"), str(tmp_path / "b.mtx"), "--nb", "7",
                   "--itype", "3", "--grid", "2x1", "--check", "--output", str(out)])
    assert res.returncode == 0, res.stdout + res.stderr
    data = np.load(out)
    w_ref = scipy.linalg.eigh(a, b, type=3, eigvals_only=True)
    np.testing.assert_allclose(data["w"], w_ref, rtol=1e-10, atol=1e-12, err_msg=f"seed={seed}")
    z = data["z"]
    np.testing.assert_allclose(b @ a @ z, z * data["w"], atol=1e-8, err_msg=f"seed={seed}")


def test_two_stage_reduction_check_passes_and_reports():
    """--reduction 2stage on a 2 x 1 grid, complex: the two-stage stages by LAPACK's names."""
    res = run_cli(["--n", "90", "--nb", "16", "--band", "8", "--reduction", "2stage", "--check",
                   "--dtype", "complex128", "--grid", "2x1", "--method", "distributed"])
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    for needle in ("2stage, band 8 [requested]", "he2hb", "hb2st", "unmtr_hb2st", "unmtr_he2hb",
                   "chase host C++" if _has_kernels() else "chase python"):
        assert needle in out, out
    assert out.count("PASS") == 2 and "FAIL" not in out


def test_band_not_dividing_nb_fails_on_every_rank():
    res = run_cli(["--n", "40", "--nb", "8", "--band", "3", "--reduction", "2stage"])
    assert res.returncode == 1
    assert res.stderr.count("error: two-stage reduction: the bandwidth 3 must be a positive divisor") == 1, res.stderr


def _has_kernels():
    try:
        from solvers import _kernels  # noqa: F401
    except ImportError:
        return False
    return True


def test_eigenvalues_only_float32_check():
    res = run_cli(["--n", "64", "--nb", "8", "--jobz", "N", "--dtype", "float32", "--check"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "check eigenvalues" in res.stdout and "PASS" in res.stdout


def test_b_not_positive_definite_names_the_minor(tmp_path):
    rng = np.random.default_rng(shared_seed())
    np.save(tmp_path / "a.npy", random_symmetric(rng, 30))
    np.save(tmp_path / "b.npy", not_positive_definite(rng, 30, 17))
    res = run_cli(["--input", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--nb", "4"], ranks=3)
    assert res.returncode != 0
    assert "leading minor of order 17" in res.stderr, res.stderr
    assert res.stderr.count("error:") == 1      # printed once, by rank 0


@pytest.mark.parametrize("case,needle", [
    ("missing", "no such file"),
    ("nonsquare", "must be square"),
    ("mismatch", "but B is"),
    ("nan", "NaN or Inf"),
    ("grid", "needs 9 MPI ranks"),
])
def test_bad_input_fails_cleanly_on_all_ranks(tmp_path, case, needle):
    rng = np.random.default_rng(shared_seed())
    a, b = random_symmetric(rng, 10), spd_with_condition(rng, 10, 10.0)
    if case == "nonsquare":
        a = a[:, :9]
    if case == "mismatch":
        b = b[:9, :9]
    if case == "nan":
        a[7, 3] = np.nan
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    args = ["--input", str(tmp_path / ("x.npy" if case == "missing" else "a.npy")), str(tmp_path / "b.npy")]
    if case == "grid":
        args += ["--grid", "3x3"]
    res = run_cli(args)
    assert res.returncode != 0
    assert needle in res.stderr, res.stderr
    assert "Traceback" not in res.stderr, res.stderr


def test_complex_files_in_results_out_match_scipy(tmp_path):
    """A Hermitian Matrix Market A and a complex .npy B (junk in its upper triangle and in the
    imaginary parts of its diagonal), uplo L: eigenvalues as scipy's, float64; vectors complex."""
    seed = shared_seed()
    rng = np.random.default_rng(seed)
    n = 30
    a, b = random_symmetric(rng, n, hermitian=True), spd_with_condition(rng, n, 50.0, hermitian=True)
    import scipy.io
    scipy.io.mmwrite(str(tmp_path / "a.mtx"), a, symmetry="hermitian")
    np.save(tmp_path / "b.npy", with_junk(rng, b, True))
    res = run_cli(["--input", str(tmp_path / "a.mtx"), str(tmp_path / "b.npy"), "--dtype", "complex128",
                   "--nb", "7", "--itype", "2", "--check", "--output", str(tmp_path / "eig"),
                   "--method", "distributed"])
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"wrote {tmp_path / 'eig.npz'}" in res.stdout
    for stage in ("hegst", "hetrd", "unmtr"):
        assert stage in res.stdout, res.stdout
    data = np.load(tmp_path / "eig.npz")
    assert data["w"].dtype == np.float64 and data["z"].dtype == np.complex128
    np.testing.assert_allclose(data["w"], scipy.linalg.eigh(a, b, type=2, eigvals_only=True),
                               rtol=1e-10, atol=1e-12, err_msg=f"seed={seed}")


@pytest.mark.parametrize("dtype,real", [("float32", np.float32), ("complex64", np.float32), ("complex128", np.float64)])
def test_output_keeps_the_working_precision(tmp_path, dtype, real):
    res = run_cli(["--n", "40", "--nb", "8", "--dtype", dtype, "--check", "--output", str(tmp_path / "r.npz")])
    assert res.returncode == 0, res.stdout + res.stderr
    data = np.load(tmp_path / "r.npz")
    assert data["w"].dtype == real and data["z"].dtype == np.dtype(dtype)


def test_bad_output_path_fails_before_the_solve(tmp_path):
    res = run_cli(["--n", "2000", "--output", str(tmp_path / "no" / "such" / "dir" / "r.npz")], timeout=60)
    assert res.returncode == 1
    assert "cannot write results to" in res.stderr and "no directory" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and "MPI_ABORT" not in res.stderr, res.stderr
    assert "stage breakdown" not in res.stdout   # nothing was solved


def test_collectives_nccl_on_cpu_says_mpi_ran():
    res = run_cli(["--n", "30", "--nb", "8", "--collectives", "nccl", "--device", "cpu"])
    assert res.returncode == 0, res.stdout + res.stderr
    line = next(line for line in res.stdout.splitlines() if line.startswith("collectives"))
    assert "mpi via mpi4py" in line and "requested nccl" in line, line


@pytest.mark.parametrize("case,needle", [
    ("directory", "it is a directory"),
    ("text_npy", "not a .npy file"),
    ("complex_as_real", "use --dtype complex128"),
])
def test_input_mistakes_get_our_message(tmp_path, case, needle):
    rng = np.random.default_rng(shared_seed())
    b = spd_with_condition(rng, 8, 10.0)
    np.save(tmp_path / "b.npy", b)
    if case == "directory":
        a_path = tmp_path
    elif case == "text_npy":
        a_path = tmp_path / "a.npy"
        a_path.write_text("1 2\n3 4\n")
    else:
        a_path = tmp_path / "a.npy"
        np.save(a_path, random_symmetric(rng, 8, hermitian=True))
    res = run_cli(["--input", str(a_path), str(tmp_path / "b.npy")])
    assert res.returncode == 1
    assert needle in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and "pickle" not in res.stderr, res.stderr


@pytest.mark.parametrize("bad, says", [(["--seed", "-1"], "from 0 to 2**32 - 1, got '-1'"),
                                       (["--seed", "2**40"], "got '2**40'"),
                                       (["--n", "abc"], "must be a positive integer, got 'abc'")])
def test_bad_values_say_what_is_wanted(bad, says, capsys):
    with pytest.raises(SystemExit) as exc:
        parse_args(bad)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and says in err and "_positive_int" not in err and "Traceback" not in err


def test_empty_input_matrices_are_one_clear_error(tmp_path):
    paths = [str(tmp_path / name) for name in ("a.npy", "b.npy")]
    for path in paths:
        np.save(path, np.zeros((0, 0)))
    res = run_cli(["--input", *paths], timeout=60)
    assert res.returncode == 1, res.stderr
    assert "0 x 0 matrix: there is no eigenproblem to solve" in res.stderr
    assert "Traceback" not in res.stderr and "MPI_ABORT" not in res.stderr


def run_mpmd(ranks_args, timeout=180):
    """One rank per entry of ``ranks_args``, each ``python -m solvers.sygvd --device cpu --n 40``
    with its own extra arguments (MPMD); returns the CompletedProcess."""
    launcher = _mpiexec()
    if launcher is None:
        pytest.skip("mpiexec not found")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    cmd = [launcher, "--allow-run-as-root", "--oversubscribe"]
    for i, args in enumerate(ranks_args):
        cmd += ([":"] if i else []) + ["-n", "1", sys.executable, "-m", "solvers.sygvd",
                                       "--device", "cpu", "--n", "40", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)


@pytest.mark.parametrize("ranks_args, differs", [
    ((["--n", "40"], ["--n", "45"]), "n: 40 on rank 0, 45 on rank 1"),
    ((["--dtype", "float64"], ["--dtype", "complex128"]), "dtype"),
    ((["--itype", "1"], ["--itype", "3"]), "itype"),
    ((["--uplo", "L"], ["--uplo", "U"]), "uplo"),
    ((["--jobz", "V"], ["--jobz", "N"]), "jobz"),
    ((["--range", "I:1:4"], ["--range", "I:1:5"]), "range"),
    ((["--nb", "8"], ["--nb", "16"]), "nb"),
    ((["--grid", "1x2"], ["--grid", "2x1"]), "grid"),
    ((["--method", "distributed"], ["--method", "single"]), "method"),
])
def test_ranks_started_with_different_command_lines_stop_alike(ranks_args, differs):
    """MPMD: each rank its own command line; one line from rank 0, exit 1 everywhere, bounded."""
    res = run_mpmd(ranks_args)
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert "was called with different problems" in res.stderr and differs in res.stderr, res.stderr
    assert res.stderr.count("error:") == 1 and "Traceback" not in res.stderr, res.stderr


@pytest.mark.parametrize("flag, values", [("--n", ("40", "40", "45", "40")), ("--uplo", ("L", "L", "L", "U"))])
def test_four_ranks_one_of_them_different(flag, values):
    """MPMD at 4 ranks: the one rank that differs is named, the three alike grouped."""
    res = run_mpmd([(flag, value) for value in values])
    odd = values.index(next(v for v in values if values.count(v) == 1))
    alike = [i for i, v in enumerate(values) if i != odd]
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert f"on rank {odd}" in res.stderr and "was called with different problems" in res.stderr, res.stderr
    assert f"ranks {alike[0]}" in res.stderr and res.stderr.count("error:") == 1, res.stderr


def test_embedded_problem_ends_with_what_to_try_next():
    res = run_cli(["--n", "40", "--device", "cpu"], timeout=120)
    assert res.returncode == 0, res.stderr
    last = res.stdout.strip().splitlines()[-1]
    assert last.startswith("next: ") and "--input" in last and "--range" in last, res.stdout
