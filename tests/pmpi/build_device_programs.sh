#!/usr/bin/env bash
# Builds the PMPI library's device programs (tests/pmpi/device_collectives_gpu.cu,
# native/bench/pmpi_latency.cu, native/bench/doorbell_latency.cu and the device API's example
# docs/examples/device_api_normalize.cu) into DIR with nvcc and the MPI C++ wrapper found on PATH (or
# $MPICXX), linked against the library that `python -m hpcolls preload` names (its directory on the
# run path). Used by tests/gpu_steps/pmpi*.steps and, as a compile check, by tests/pmpi/run.sh.
#   bash tests/pmpi/build_device_programs.sh DIR [python]
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
out="$1"; py="${2:-${PY:-python3}}"
mpicxx="${MPICXX:-$(command -v mpicxx || command -v mpic++)}"
lib="$("$py" -m hpcolls preload)"
dir="$(dirname "$lib")"
mkdir -p "$out"
for src in tests/pmpi/device_collectives_gpu.cu native/bench/pmpi_latency.cu native/bench/doorbell_latency.cu \
           docs/examples/device_api_normalize.cu; do
  nvcc -ccbin "$mpicxx" -std=c++17 -O2 -I"$repo/native/include" -o "$out/$(basename "$src" .cu)" "$repo/$src" \
    -L"$dir" -lhpcolls_pmpi_staging -Xlinker -rpath -Xlinker "$dir" -ldl
done
echo "$out"
