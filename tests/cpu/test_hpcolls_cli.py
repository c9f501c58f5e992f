"""`python -m hpcolls --help` lists every subcommand with one line each, each listed one runs,
and anything else is a usage error (exit 2) that names the subcommands."""
import os
import re
import subprocess
import sys

SUBCOMMANDS = {"info", "preload", "bench", "tune"}


def _run(*args):
    return subprocess.run([sys.executable, "-m", "hpcolls", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})


def listed_subcommands(text):
    section = text.split("subcommands:\n", 1)[1].split("\n\n", 1)[0]
    return dict(re.match(r"  (\S+)\s+(.+)$", line).groups() for line in section.splitlines())


def test_help_lists_every_subcommand_in_one_line():
    for flag in ("--help", "-h"):
        out = _run(flag)
        assert out.returncode == 0, out.stderr
        listed = listed_subcommands(out.stdout)
        assert set(listed) == SUBCOMMANDS
        assert all(len(doc) > 20 for doc in listed.values()), listed
    assert _run().stdout == _run("--help").stdout  # no arguments: the same help


def test_every_listed_subcommand_runs():
    assert _run("bench", "--help").returncode == 0  # bench's own options (a run needs mpiexec-sized time)
    assert "--min-bytes" in _run("bench", "--help").stdout
    info = _run("info")
    assert info.returncode == 0 and "MPI CUDA-aware:" in info.stdout, info.stderr
    assert "selection table in force over COMM_WORLD: " in info.stdout  # built-in or tuned, and why
    assert _run("tune", "--help").returncode == 0
    preload = _run("preload")
    assert preload.returncode == 0 and os.path.isfile(preload.stdout.strip()), preload.stderr


def test_info_prints_text_without_nul():
    """Open MPI's version string ends in a NUL (its length counts the C string's end): `info` prints
    the version without it, so its output is text (grep called it a binary file)."""
    from mpi4py import MPI
    raw = subprocess.run([sys.executable, "-m", "hpcolls", "info"], capture_output=True, timeout=120,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert raw.returncode == 0, raw.stderr
    assert b"\0" not in raw.stdout
    lines = raw.stdout.decode().splitlines()
    assert all(line.isprintable() for line in lines), [line for line in lines if not line.isprintable()]
    library = MPI.Get_library_version().split("\0", 1)[0].splitlines()[0].strip()
    assert f"MPI: {library}" in lines


def test_unknown_subcommand_is_a_usage_error_naming_the_subcommands():
    for args, what in ((["frobnicate"], "unknown subcommand 'frobnicate'"), (["--frob"], "unknown option '--frob'"),
                       (["info", "extra"], "info takes no arguments"),
                       (["preload", "extra"], "preload takes no arguments")):
        out = _run(*args)
        assert out.returncode == 2, (args, out)
        assert what in out.stderr
        assert "subcommands: info, preload, bench, tune" in out.stderr
        assert out.stdout == ""
