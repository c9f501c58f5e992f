#!/usr/bin/env bash
# Builds hpcolls' native modules (hpcolls._native, hpcolls._host_entry, solvers._kernels, and
# hpcolls._native_diag with HPCOLLS_DIAGNOSTICS=1) for another machine's Python, and the PMPI staging library
# libhpcolls_pmpi_staging.so (no MPI header: it finds the MPI library at run time, so it serves
# that machine's Open MPI 4 too), here, so that the GPU machine spends its scarce time on tests
# instead of compiling: `tests/gpu_harness.sh --modules DIR` puts them in
# place there. The modules link the CUDA runtime statically, so they need only the driver and a
# C++ runtime at least as new as this machine's.
#
#   PYTHON=python3.12 bash tests/prebuild_modules.sh OUTDIR
#
# PYTHON: an interpreter of the target machine's version (its X.Y must match: the modules are
# built for that ABI; default python3). HPCOLLS_CUDA_ARCHITECTURES as for every build (default
# here 90-real: Hopper, the GPU machine's). Builds in OUTDIR/build (kept, so a second run only
# recompiles what changed) with a private venv holding pybind11 and ninja (OUTDIR/venv).
set -euo pipefail
[ $# -eq 1 ] || { sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; }
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
if [ ! -x "$out/venv/bin/python" ]; then
  "${PYTHON:-python3}" -m venv "$out/venv"
  "$out/venv/bin/python" -m pip install --disable-pip-version-check -q pybind11 ninja
fi
py="$out/venv/bin/python"
export HPCOLLS_CUDA_ARCHITECTURES="${HPCOLLS_CUDA_ARCHITECTURES:-90-real}" PATH="$out/venv/bin:$PATH"
cmake -S "$repo" -B "$out/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPython_EXECUTABLE="$py" \
  -Dpybind11_DIR="$("$py" -c 'import pybind11; print(pybind11.get_cmake_dir())')" >/dev/null
ninja -C "$out/build"
cp "$out"/build/*.so "$out/"
echo "built for $("$py" -c 'import sys; print(sys.implementation.cache_tag)') (${HPCOLLS_CUDA_ARCHITECTURES}): $(cd "$out" && echo ./*.so)"
