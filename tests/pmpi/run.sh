#!/usr/bin/env bash
# The PMPI library's C (and, where a compiler is found, Fortran) tests on a CPU machine, each run
# without and with the library (LD_PRELOAD), as tests/run.sh runs them in CI:
#   - collectives_cpu.c at 1, 2 and 4 ranks: every host-buffer result bitwise the same with the
#     library as without (one digest of them all), and pretend device memory staged through host
#     memory giving the host result;
#   - host_overhead.c at 1 and 2 ranks: the time an 8-byte host MPI_Allreduce gains with the
#     library (median batches, alternating runs); printed, and failed above HPCOLLS_PMPI_HOST_NS_LIMIT
#     (default 50) at 1 rank, where the MPI call itself is quiet enough to resolve it;
#   - fortran_mpi.sh: the Fortran programs (mpif.h, `use mpi`, `use mpi_f08`) at 1, 2 and 4 ranks,
#     host results bitwise the same with the library as without, pretend device arrays staged; or
#     SKIP saying why where no MPI Fortran wrapper is found (CI installs one: .ci/run);
#   - the device programs (device_collectives_gpu.cu, native/bench/pmpi_latency.cu) built with nvcc
#     and run, which skip without a GPU saying so.
# Uses the venv's mpicc, mpicxx and mpiexec (HPCOLLS_VENV, default <repo>/.venv), else those on PATH
# (a venv built on the machine's MPI has none of its own).
set -uo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${HPCOLLS_VENV:-$repo/.venv}"
export PATH="$venv/bin:$PATH" OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
lib="$("$venv/bin/python" -m hpcolls preload)" || { echo "FAIL: no PMPI library (python -m hpcolls preload)"; exit 1; }
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

mpicc -O2 -Wall -Werror -o "$work/collectives_cpu" "$repo/tests/pmpi/collectives_cpu.c" -ldl || exit 1
mpicc -O2 -Wall -Werror -o "$work/host_overhead" "$repo/tests/pmpi/host_overhead.c" || exit 1
export HPCOLLS_TEST_SEED=$RANDOM$RANDOM
for n in 1 2 4; do
  plain="$(timeout 300 mpiexec --oversubscribe -n $n "$work/collectives_cpu")" || fail "collectives_cpu, $n ranks, without the library"
  with="$(timeout 300 mpiexec --oversubscribe -n $n -x LD_PRELOAD="$lib" "$work/collectives_cpu")" || fail "collectives_cpu, $n ranks, with the library: $with"
  d_plain="$(grep '^digest' <<<"$plain")"; d_with="$(grep '^digest' <<<"$with")"
  if [ -n "$d_plain" ] && [ "$d_plain" = "$d_with" ]; then echo "ok: collectives_cpu at $n ranks, host results equal with and without the library, staged results equal the host ones"
  else fail "collectives_cpu at $n ranks: digests differ ($d_plain / $d_with)"; fi
done

limit="${HPCOLLS_PMPI_HOST_NS_LIMIT:-50}"
for n in 1 2; do
  plain=(); with=()
  for round in 1 2 3; do
    plain+=("$(timeout 120 mpiexec --oversubscribe -n $n "$work/host_overhead")")
    with+=("$(timeout 120 mpiexec --oversubscribe -n $n -x LD_PRELOAD="$lib" "$work/host_overhead")")
  done
  read -r p w d < <(python3 -c "import statistics as s,sys; p=s.median(map(float,sys.argv[1].split())); w=s.median(map(float,sys.argv[2].split())); print('%.1f %.1f %.1f' % (p, w, w - p))" "${plain[*]}" "${with[*]}")
  [ -n "${d:-}" ] || { fail "host_overhead at $n ranks gave no timings (${plain[*]} / ${with[*]})"; continue; }
  echo "host MPI_Allreduce 8 B at $n ranks: ${p} ns without, ${w} ns with the library: ${d} ns added (runs: ${plain[*]} / ${with[*]})"
  if [ "$n" = 1 ] && python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)" "$d" "$limit"; then
    fail "the library adds $d ns per host call at 1 rank (limit $limit)"
  fi
done

bash "$repo/tests/pmpi/fortran_mpi.sh" "$lib" || status=1

# The device programs (GPU steps: tests/gpu_steps/pmpi.steps) must build here, and skip saying why.
if command -v nvcc >/dev/null 2>&1; then
  # The venv's mpicxx (PATH has the venv first), else the one beside the machine's mpiexec that a
  # venv built on it (setup.sh, HPCOLLS_MPI_SOURCE=auto) runs on: such a venv has none of its own.
  if MPICXX="$(command -v mpicxx || command -v mpic++)" bash "$repo/tests/pmpi/build_device_programs.sh" "$work/device" "$venv/bin/python" >/dev/null; then
    for program in device_collectives_gpu pmpi_latency device_api_normalize; do
      echo "$program: $(timeout 120 mpiexec --oversubscribe -n 1 "$work/device/$program" | tail -1)"
    done
  else
    fail "the device programs do not build"
  fi
else
  echo "SKIP: device programs: no nvcc here"
fi
exit $status
