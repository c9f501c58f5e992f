#!/usr/bin/env bash
# GPU test harness: build in place, start CUDA MPS, run tests/gpu with 1, 2 and 4 ranks on one
# GPU (one rank per GPU when there are several), stop MPS, print a pass/fail table.
#
#   bash tests/gpu_harness.sh [--ranks "1 2 4"] [--no-build | --modules DIR] [--no-tests] [--bench]
#        [--bench-args "..."] [--solver-bench "N ..."] [--microbench]
#        [--mpi4py-suite] [--mpi4py-suite-args "..."] [--steps FILE [--deadline S]]
#        [-- extra pytest args]
#
# --bench: after the tests, python -m hpcolls.bench for every rank count (JSON and table next to
# the logs) for docs/PERFORMANCE.md; --bench-args replaces its default arguments (--no-inplace).
# --solver-bench "8192 16384": python -m solvers.bench at those orders, one rank (beside
# cuSOLVER), then, for each rank count > 1, the smallest order with --collectives hpcolls and mpi.
# --modules DIR: instead of building, put the modules tests/prebuild_modules.sh built elsewhere
# (DIR/*.so, for this machine's Python, and the PMPI staging library) into the tree and import
# hpcolls from it (PYTHONPATH);
# if they do not import here, build as without the option.
# --microbench: first, build and run native/bench's one-process diagnostics (the one-shot
# anatomy ladder, with Nsight Compute's counters of its kernels when ncu is there, and the
# speed-of-light flags between GPU 0 and every GPU it reaches).
# --mpi4py-suite: for every rank count, mpi4py's own test modules with cupy arrays through
# hpcolls.wrap, against the plain run with host arrays (plain mpi4py cannot take cupy arrays on
# an MPI that is not CUDA-aware): tests/mpi4py_suite/run.sh --arrays cupy --reference-arrays host
# --known none --timeout-factor 6, plus --mpi4py-suite-args (e.g. "--modules 'test_cco_buf'"). This machine has no PyPI: the mpi4py sdist must already be in
# .venv/mpi4py-suite (bash tests/mpi4py_suite/run.sh --fetch-only where PyPI is reachable).
#
# --steps FILE: instead of the rank loop, the steps FILE lists (tests/gpu_steps/*.steps: one per
# line, "NAME SECONDS COMMAND", # comments), in order: each under `timeout` SECONDS, or less where
# --deadline S (seconds from the harness's start) is nearer, not run with under 20 s left; MPS
# restarted before each (a client aborted in one step leaves the next without the GPU). Commands
# see PY (python), MPX (mpiexec --oversubscribe), PYT (pytest, quiet, --maxfail=10), G (tests/gpu)
# and STEP_LOGS (where to put --json / --plot files). Every step's output and a summary line per
# step are packed into $logs/steps.tgz (a device call brings back few files) and the summary is
# printed. STEPS="name ..." in the environment runs only those steps.
#
# Runs with the machine's own python3 and packages (no internet): cupy, mpi4py, pybind11,
# scikit-build-core, cmake, ninja must be there; the build uses --no-build-isolation.
# Logs go to $OUT (or ./gpu-harness-logs) when set.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ranks_list="1 2 4"
build=1
modules=""
bench=0
bench_args="--no-inplace"
solver_orders=""
tests=1
microbench=0
mpi4py_suite=0
mpi4py_suite_args=""
steps_file=""
deadline_s=100000
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks_list="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --modules) modules="$2"; shift 2 ;;
    --bench) bench=1; shift ;;
    --bench-args) bench_args="$2"; shift 2 ;;
    --solver-bench) solver_orders="$2"; shift 2 ;;
    --no-tests) tests=0; shift ;;
    --microbench) microbench=1; shift ;;
    --mpi4py-suite) mpi4py_suite=1; shift ;;
    --mpi4py-suite-args) mpi4py_suite_args="$2"; shift 2 ;;
    --steps) steps_file="$2"; shift 2 ;;
    --deadline) deadline_s="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "gpu_harness: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
started_at=$(date +%s)
if [ -n "$steps_file" ] && [ ! -f "$steps_file" ]; then echo "gpu_harness: no steps file $steps_file" >&2; exit 2; fi
logs="${OUT:-$PWD/gpu-harness-logs}"
mkdir -p "$logs"
py="${PYTHON:-python3}"
export NCCL_NVLS_ENABLE=0 PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/tests/gpu${PYTHONPATH:+:$PYTHONPATH}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

if [ -n "$modules" ]; then
  cp "$modules"/_native*.so "$modules"/_host_entry*.so "$modules"/libhpcolls_pmpi_staging.so hpcolls/ &&
    cp "$modules"/_kernels*.so solvers/ || exit 1
  export PYTHONPATH="$PWD:$PYTHONPATH"
  if "$py" -c 'import hpcolls._native, hpcolls._host_entry, solvers._kernels'; then
    echo "== prebuilt modules from $modules: $(cd "$modules" && echo ./*.so)"
    build=0
  else
    echo "== the modules in $modules do not import here: building instead"
    rm -f hpcolls/_native*.so hpcolls/_host_entry*.so hpcolls/libhpcolls_pmpi_staging.so solvers/_kernels*.so
  fi
fi
if [ "$build" = 1 ]; then
  # With the diagnostic module (LL modes 1..3, the benchmark's launch probes) unless told not to:
  # HPCOLLS_DIAGNOSTICS=0 builds what users get, and the tests that need the module skip.
  echo "== build (HPCOLLS_CUDA_ARCHITECTURES=${HPCOLLS_CUDA_ARCHITECTURES:=90-real}, HPCOLLS_DIAGNOSTICS=${HPCOLLS_DIAGNOSTICS:=1})"
  export HPCOLLS_CUDA_ARCHITECTURES HPCOLLS_DIAGNOSTICS
  if ! "$py" -m pip install --no-build-isolation --no-deps -e . >"$logs/build.log" 2>&1; then
    tail -40 "$logs/build.log"; echo "BUILD FAILED"; exit 1
  fi
fi
# hpcolls' PMPI staging library in front of MPI in every process from here on (tests, steps,
# benchmarks): mpi4py's own Message, Datatype.Pack* and Op.Reduce_local calls stage device buffers
# on this MPI, which is not CUDA-aware (tests/mpi4py_suite/run.sh takes it out of its plain runs).
preload_lib=$("$py" -m hpcolls preload) || { echo "gpu_harness: no PMPI staging library (python -m hpcolls preload)"; exit 1; }
export LD_PRELOAD="$preload_lib${LD_PRELOAD:+:$LD_PRELOAD}"
echo "== LD_PRELOAD=$LD_PRELOAD"
ngpu=$("$py" -c 'import hpcolls; print(hpcolls.device_count())')
echo "== $ngpu GPU(s) visible"
"$py" -m hpcolls info | tee "$logs/info.txt"
[ "$ngpu" -ge 1 ] || { echo "no GPU visible: nothing to run"; exit 1; }

if [ "$microbench" = 1 ]; then
  arch="${HPCOLLS_CUDA_ARCHITECTURES:-90-real}"
  arch="${arch%%-*}"
  for b in oneshot_anatomy sol_microbench; do
    extra_src=$([ "$b" = oneshot_anatomy ] && echo native/hpcolls/allreduce_oneshot.cu native/hpcolls/allreduce_oneshot_small.cu)
    echo "== native/bench/$b"
    # shellcheck disable=SC2086  # extra_src is a list of paths (or empty) on purpose
    if nvcc -O3 -std=c++17 -arch=sm_"$arch" -Inative/include "native/bench/$b.cu" $extra_src -o "/tmp/hpcolls-$b"; then
      "/tmp/hpcolls-$b" | tee "$logs/$b.txt"
      if [ "$b" = oneshot_anatomy ] && command -v ncu >/dev/null; then
        # Per-kernel instruction counts and stall reasons of every row (clocks left alone).
        if ncu --clock-control none --cache-control none --section WarpStateStats \
             --metrics smsp__inst_executed.sum,gpu__time_duration.sum,sm__cycles_elapsed.max --csv \
             "/tmp/hpcolls-$b" --profile >"$logs/$b-ncu.csv" 2>"$logs/$b-ncu.err"; then
          echo "ncu counters: $logs/$b-ncu.csv"
        else
          echo "ncu failed:"; tail -5 "$logs/$b-ncu.err"
        fi
      fi
    else
      echo "$b did not build"
    fi
  done
fi

mps_started=0
start_mps() {
  export CUDA_MPS_PIPE_DIRECTORY=/tmp/hpcolls-mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/hpcolls-mps/log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d && mps_started=1 && echo "== CUDA MPS started ($CUDA_MPS_PIPE_DIRECTORY)"
}
stop_mps() {
  if [ "$mps_started" = 1 ]; then echo quit | nvidia-cuda-mps-control; mps_started=0; echo "== CUDA MPS stopped"; fi
}
trap stop_mps EXIT

restart_mps() {
  if [ "$mps_started" = 1 ]; then echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; sleep 1; mps_started=0; fi
  start_mps >/dev/null
}

# Runs the steps of $steps_file (see --steps); the exit status is 1 when any step failed.
run_steps() {
  local dir name seconds command left rc status=0 wanted
  dir=$(mktemp -d)/steps
  mkdir -p "$dir"
  export PY="$py" MPX="mpiexec --oversubscribe" G=tests/gpu STEP_LOGS="$dir"
  export PYT="$py -m pytest -q -p no:cacheprovider --color=no --maxfail=10"
  while read -r name seconds command; do
    case "$name" in ''|'#'*) continue ;; esac
    wanted=" ${STEPS:-$name} "
    [[ "$wanted" == *" $name "* ]] || continue
    left=$(( deadline_s - ($(date +%s) - started_at) ))
    if [ "$left" -lt 20 ]; then echo "$name: not run (the deadline)" >>"$dir/summary.txt"; continue; fi
    [ "$seconds" -le "$left" ] || seconds=$left
    echo "== [$(( $(date +%s) - started_at )) s] step $name (<= $seconds s)"
    restart_mps
    HPCOLLS_TEST_DEADLINE=$(( seconds > 20 ? seconds - 8 : seconds )) \
      timeout --kill-after=5 "$seconds" bash -c "$command" </dev/null >"$dir/$name.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] || status=1
    echo "$name: rc=$rc at $(( $(date +%s) - started_at )) s: $(grep -E "passed|failed|error|ratio" "$dir/$name.log" | tail -1 | cut -c1-240)" \
      | tee -a "$dir/summary.txt"
  done <"$steps_file"
  stop_mps
  tar czf "$logs/steps.tgz" -C "$(dirname "$dir")" steps
  echo; echo "== summary (logs: $logs/steps.tgz)"; cat "$dir/summary.txt"
  return $status
}
if [ -n "$steps_file" ]; then
  run_steps
  exit $?
fi

declare -A result suite_result
for n in $ranks_list; do
  if [ "$n" -gt "$ngpu" ] && [ "$mps_started" = 0 ]; then start_mps; fi
  placement=$([ "$n" -gt "$ngpu" ] && echo "$n ranks on $ngpu GPU(s), MPS" || echo "one rank per GPU")
  if [ "$tests" = 1 ]; then
    echo "== tests/gpu with $n rank(s): $placement"
    log="$logs/gpu-tests-n$n.log"
    timeout 900 mpiexec --oversubscribe -n "$n" "$py" -m pytest tests/gpu -q --maxfail=10 -p no:cacheprovider --color=no \
      "${extra[@]}" >"$log" 2>&1
    rc=$?
    summary=$(grep -E "^(=+ )?[0-9]+ (passed|failed|skipped|error)" "$log" | tail -1)
    result[$n]="rc=$rc ${summary:-no summary} ($placement)"
    [ "$rc" = 0 ] || tail -60 "$log"
  else
    result[$n]="rc=0 tests not run (--no-tests) ($placement)"
  fi
  if [ "$bench" = 1 ]; then
    echo "== hpcolls.bench with $n rank(s)"
    # shellcheck disable=SC2086  # bench_args is a list of words on purpose
    timeout 600 mpiexec --oversubscribe -n "$n" "$py" -m hpcolls.bench $bench_args \
      --json "$logs/bench-n$n.json" >"$logs/bench-n$n.txt" 2>&1 || echo "bench with $n ranks failed (see $logs/bench-n$n.txt)"
    tail -25 "$logs/bench-n$n.txt"
  fi
  if [ "$mpi4py_suite" = 1 ]; then
    echo "== mpi4py's test suite with cupy arrays through hpcolls, $n rank(s): $placement"
    suite_log="$logs/mpi4py-suite-n$n.log"
    # shellcheck disable=SC2086  # mpi4py_suite_args is a list of words on purpose
    bash tests/mpi4py_suite/run.sh --python "$py" --ranks "$n" --arrays cupy --reference-arrays host \
      --known none --timeout-factor 6 --out "$logs/mpi4py-suite-n$n" $mpi4py_suite_args >"$suite_log" 2>&1
    rc=$?
    tail -70 "$suite_log"
    suite_result[$n]="rc=$rc $(grep "^mpi4py-suite:" "$suite_log" | tail -1)"
  fi
  if [ -n "$solver_orders" ]; then
    if [ "$n" = 1 ]; then
      echo "== solvers.bench, 1 rank, n = $solver_orders (beside cuSOLVER)"
      # shellcheck disable=SC2086
      timeout 900 "$py" -m solvers.bench --n $solver_orders --repeat 2 --json "$logs/solver-n1.json" 2>&1 | tee "$logs/solver-n1.txt" | tail -40
    else
      smallest=$(echo "$solver_orders" | tr ' ' '\n' | sort -n | head -1)
      for kind in hpcolls mpi; do
        echo "== solvers.bench, $n ranks ($placement), n = $smallest, --collectives $kind"
        timeout 900 mpiexec --oversubscribe -n "$n" "$py" -m solvers.bench --n "$smallest" --repeat 2 \
          --collectives "$kind" --json "$logs/solver-n$n-$kind.json" 2>&1 | tee "$logs/solver-n$n-$kind.txt" | tail -14
      done
    fi
  fi
done
stop_mps

echo
echo "| ranks | result |"
echo "| --- | --- |"
status=0
for n in $ranks_list; do
  echo "| $n | ${result[$n]} |"
  case "${result[$n]}" in rc=0*) ;; *) status=1 ;; esac
done
if [ "$mpi4py_suite" = 1 ]; then
  echo
  echo "| ranks | mpi4py's suite, cupy arrays through hpcolls against plain mpi4py with host arrays |"
  echo "| --- | --- |"
  for n in $ranks_list; do
    echo "| $n | ${suite_result[$n]} (details: $logs/mpi4py-suite-n$n.log) |"
    case "${suite_result[$n]}" in rc=0*) ;; *) status=1 ;; esac
  done
fi
exit $status
