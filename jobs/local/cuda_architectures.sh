#!/usr/bin/env bash
# Prints the CUDA code jobs/local/setup.sh builds on this machine, as a value of
# HPCOLLS_CUDA_ARCHITECTURES (CMakeLists.txt reads it):
#   - HPCOLLS_CUDA_ARCHITECTURES itself when it is set (the user's choice always wins);
#   - else, when nvidia-smi lists GPUs, machine code for each of their compute capabilities
#     ("90-real" on H100/H200; "80-real;90-real" on a mixed node), or "default" (CMake's default
#     list, what a wheel gets) when a capability cannot be read or nvcc cannot build it;
#   - else "no-gpu": no GPU here, so no GPU code worth the time (the modules still build and import).
# A second line says why, for setup.sh's progress line.
set -euo pipefail

if [[ -n ${HPCOLLS_CUDA_ARCHITECTURES:-} ]]; then
  printf '%s\n%s\n' "$HPCOLLS_CUDA_ARCHITECTURES" "HPCOLLS_CUDA_ARCHITECTURES as set"
  exit 0
fi
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  printf '%s\n%s\n' "no-gpu" "no GPU here, so no GPU code; HPCOLLS_CUDA_ARCHITECTURES=90-real builds it"
  exit 0
fi
default() { printf '%s\n%s\n' default "$1: CMake's default list"; exit 0; }
capabilities="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | sort -u)" ||
  default "nvidia-smi does not report compute capabilities"
[[ -n $capabilities ]] || default "nvidia-smi does not report compute capabilities"
supported="$(nvcc --list-gpu-code 2>/dev/null || true)"
archs=()
for cc in $capabilities; do
  [[ $cc =~ ^[0-9]+$ ]] || default "compute capability '$cc' unreadable"
  if [[ -n $supported ]] && ! grep -qx "sm_$cc" <<<"$supported"; then
    default "this nvcc cannot build sm_$cc"
  fi
  archs+=("$cc-real")
done
printf '%s\n%s\n' "$(IFS=';'; echo "${archs[*]}")" "the GPUs here"
