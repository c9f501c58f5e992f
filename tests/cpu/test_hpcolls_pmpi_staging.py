"""hpcolls' PMPI staging library (native/pmpi_staging) on a machine without a GPU: it is built and
found, loads under LD_PRELOAD in front of the MPI library that mpi4py opens, leaves host buffers'
results bitwise as they were, stages "device" buffers (memory MPI cannot touch, the library's test
hook) to the same bits, and `python -m hpcolls info` says whether it is active."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mpi_tools import mpi_tool

REPO = Path(__file__).resolve().parents[2]
CALLS = str(REPO / "tests/pmpi_staging_calls.py")


def _preload_path():
    done = subprocess.run([sys.executable, "-m", "hpcolls", "preload"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _mpiexec(ranks, *args, preload=None):
    mpiexec = mpi_tool("mpiexec")
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    done = subprocess.run([mpiexec, "--oversubscribe", "-n", str(ranks), sys.executable, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _digests(output):
    """{rank: (digest, calls)} from tests/pmpi_staging_calls.py's lines."""
    lines = [line.split() for line in output.splitlines() if line.startswith("rank ")]
    return {int(w[1].rstrip(":")): (w[3], " ".join(w[5:])) for w in lines}


def test_preload_prints_the_library_file():
    path = _preload_path()
    assert os.path.isabs(path) and os.path.isfile(path) and path.endswith("libhpcolls_pmpi_staging.so")


def test_library_exports_only_mpi_entry_points_and_its_own_functions():
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm on this machine")
    out = subprocess.run([nm, "-D", "--defined-only", _preload_path()], capture_output=True, text=True).stdout
    names = {line.split()[-1] for line in out.splitlines() if line.strip()}
    assert {"MPI_Mrecv", "MPI_Imrecv", "MPI_Pack", "MPI_Unpack", "MPI_Pack_external", "MPI_Unpack_external",
            "MPI_Reduce_local", "hpcolls_pmpi_staging_active"} <= names
    assert {"MPI_Allreduce", "MPI_Bcast", "MPI_Reduce", "MPI_Allgather", "MPI_Reduce_scatter_block",
            "MPI_Reduce_scatter", "mpi_allreduce_", "MPI_ALLREDUCE", "hpcolls_allreduce_enqueue"} <= names
    # Open MPI's C functions behind the Fortran entries of the six collectives: the route of
    # `use mpi_f08` (native/pmpi_staging/fortran_entry_points.cpp), these six and no other.
    ompi_fortran = {"ompi_allreduce_f", "ompi_bcast_f", "ompi_reduce_f", "ompi_allgather_f",
                    "ompi_reduce_scatter_block_f", "ompi_reduce_scatter_f"}
    assert ompi_fortran <= names
    # No large-count entries (mpi4py would then think Open MPI has them) and nothing of the C++ runtime
    # (Fortran's names: mpi_* and MPI_* in capitals).
    mpi = ("MPI_", "mpi_", "hpcolls_")
    assert not [n for n in names - ompi_fortran if not n.startswith(mpi) or n.endswith("_c")], names


@pytest.mark.parametrize("ranks", [2, 3])
def test_host_buffers_give_the_same_bits_with_the_library_preloaded(ranks):
    plain = _digests(_mpiexec(ranks, CALLS))
    preloaded = _digests(_mpiexec(ranks, CALLS, preload=_preload_path()))
    assert sorted(plain) == list(range(ranks)) == sorted(preloaded)
    assert {r: d for r, (d, _) in plain.items()} == {r: d for r, (d, _) in preloaded.items()}
    assert all(calls == "not preloaded" for _, calls in plain.values())
    # Every Pack/Unpack/Pack_external/Unpack_external/Mrecv/Imrecv/Reduce_local went through it.
    assert all(calls.isdigit() and int(calls) > 0 for _, calls in preloaded.values()), preloaded


@pytest.mark.parametrize("ranks", [2, 3])
def test_device_buffers_are_staged_to_the_same_bits(ranks):
    """Every buffer in memory with no access: MPI touching one would crash the rank."""
    host = _digests(_mpiexec(ranks, CALLS, preload=_preload_path()))
    staged = _digests(_mpiexec(ranks, CALLS, "--buffers", "pretend-device", preload=_preload_path()))
    assert {r: d for r, (d, _) in host.items()} == {r: d for r, (d, _) in staged.items()}


def _info_line(preload):
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    if preload:
        env["LD_PRELOAD"] = preload
    done = subprocess.run([sys.executable, "-m", "hpcolls", "info"], env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [l for l in done.stdout.decode(errors="replace").splitlines() if l.startswith("PMPI staging library")]
    assert len(lines) == 1, done.stdout[-2000:]
    return lines[0]


def test_info_says_whether_the_library_is_active():
    assert "active (preloaded: " in _info_line(_preload_path())
    inactive = _info_line(None)
    assert "not preloaded" in inactive and "LD_PRELOAD=$(python -m hpcolls preload)" in inactive


def test_cuda_awareness_is_the_library_rule_and_honours_the_override(monkeypatch):
    from hpcolls.staging import cuda_aware, pmpi_library
    for text, expected in (("0", False), ("1", True)):
        monkeypatch.setenv("HPCOLLS_MPI_CUDA_AWARE", text)
        cuda_aware.cache_clear()
        assert cuda_aware() == (expected, f"HPCOLLS_MPI_CUDA_AWARE={text}")
    monkeypatch.delenv("HPCOLLS_MPI_CUDA_AWARE")
    cuda_aware.cache_clear()
    aware, how = cuda_aware()
    assert (aware, how) == pmpi_library.cuda_aware_rule(None)
    cuda_aware.cache_clear()
