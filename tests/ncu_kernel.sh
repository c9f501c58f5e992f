#!/usr/bin/env bash
# Nsight Compute on one launch of a kernel in a Python program, for the GPU machine (outside
# tests/gpu_harness.sh: under its CUDA MPS, ncu stalled past a step's time limit):
#
#   bash tests/ncu_kernel.sh KERNEL_REGEX SKIP -- python3 -m solvers.bench.ormtr_sb2st --n 8192
#
# profiles the (SKIP+1)-th launch whose name matches KERNEL_REGEX (skip the warm-up and early
# launches: a Q2 at n = 8192 makes ~256 slot kernels) with the sections that told us what bounds a
# kernel (speed of light, compute and memory workload, occupancy, launch statistics, warp
# states), clocks left as they are (--clock-control none), and prints ncu's report. Every other
# launch runs under ncu's interception too, so keep the program short.
set -euo pipefail
[ $# -ge 4 ] && [ "$3" = "--" ] || { sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; }
kernel="$1" skip="$2"
shift 3
exec ncu --clock-control none -k "regex:$kernel" --launch-skip "$skip" --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section Occupancy --section LaunchStats --section WarpStateStats "$@"
