#!/usr/bin/env bash
# All tests: sets up (first run only), then runs
#   tests/gpu  plain pytest (skips, saying why, without a GPU; tests/gpu_harness.sh runs them
#              with several ranks on a GPU machine)
#   tests/cpu  plain pytest, over the cores (pytest-xdist)
#   tests/mpi  under mpiexec with 1, 2 and 4 ranks (oversubscribed), each run bounded by a
#              time-out so a hung rank fails the run instead of stalling it
#   tests/pmpi  the PMPI library's C/C++ (and Fortran) programs, without and with the library
#   tests/mpi4py_suite  mpi4py's own test modules at 3 ranks, plain and through hpcolls.wrap:
#              every test's outcome must be the same (its own closing line, "mpi4py-suite: ...";
#              HPCOLLS_TEST_MPI4PY_SUITE=0 leaves it out; run alone: tests/mpi4py_suite/run.sh)
# and ends with one summary line. Extra arguments go to every pytest run (e.g. -k name).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$repo/jobs/local/setup.sh" || { echo "set-up failed" >&2; exit 1; }
set +e  # setup.sh runs with -e; here every suite runs and the summary decides
# The venv's MPI tools first: a machine may carry another MPI on PATH (Debian's, which CI installs
# for the Fortran test), whose mpiexec and compiler wrappers do not serve this venv's mpi4py.
PATH="$(dirname "$HPCOLLS_PY"):$PATH"
export PATH
cd "$repo"
reports="$(mktemp -d)"
trap 'rm -rf "$reports"' EXIT
mpi_timeout="${HPCOLLS_TEST_TIMEOUT:-600}"
# A failing test under mpiexec aborts its job before pytest writes the JUnit report; the ranks
# append the failure here instead (tests/conftest.py), and the end of this script reprints it.
export HPCOLLS_TEST_ABORT_LOG="$reports/aborted.txt"
# Several ranks share few cores here: one BLAS thread per process, or oversubscription crawls.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
failed_runs=()

run() {  # run NAME COMMAND...
  local name="$1"; shift
  echo "== $name"
  "$@" --junitxml="$reports/$name.xml" -p no:cacheprovider "${extra[@]}"
  local rc=$?
  # Exit 5 (nothing collected) is a broken suite, except for tests/gpu on a machine without a
  # GPU, where every module skips itself (the skips and their reasons are printed above).
  if [ "$rc" = 5 ] && [ "$name" = gpu ] && [ "$("$HPCOLLS_PY" -c 'import hpcolls; print(hpcolls.gpu_available())')" = False ]; then
    rc=0
  fi
  [ "$rc" = 0 ] || failed_runs+=("$name (exit $rc)")
}
extra=("$@")

run gpu "$HPCOLLS_PY" -m pytest tests/gpu -q -rs
# tests/cpu is many small single-process tests: spread over the cores by pytest-xdist (at most 4
# workers, each a Python with numpy and mpi4py; docs/JOURNAL.md#2026-12-08-0043 has the gain).
run cpu "$HPCOLLS_PY" -m pytest tests/cpu -q -n auto --maxprocesses 4
for n in 1 2 4; do
  run "mpi-n$n" timeout --kill-after=15 "$mpi_timeout" "${HPCOLLS_MPIEXEC[@]}" -n "$n" \
    "$HPCOLLS_PY" -m pytest tests/mpi -q
done

# The PMPI library's C (and Fortran, where a compiler is found) programs, without and with it.
echo "== pmpi-c"
HPCOLLS_VENV="$(dirname "$(dirname "$HPCOLLS_PY")")" bash tests/pmpi/run.sh
rc=$?
[ "$rc" = 0 ] || failed_runs+=("pmpi-c (exit $rc)")

if [ "${HPCOLLS_TEST_MPI4PY_SUITE:-1}" != 0 ]; then
  echo "== mpi4py-suite"
  bash tests/mpi4py_suite/run.sh --out "$reports/mpi4py-suite"
  rc=$?
  [ "$rc" = 0 ] || failed_runs+=("mpi4py-suite (exit $rc)")
fi

if [ -s "$HPCOLLS_TEST_ABORT_LOG" ]; then
  echo "== failures that aborted an MPI job (each rank that saw one)"
  cat "$HPCOLLS_TEST_ABORT_LOG"
fi
"$HPCOLLS_PY" - "$reports" <<'PY'
import glob, os, sys, xml.etree.ElementTree as ET
tot = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for path in glob.glob(sys.argv[1] + "/*.xml"):
    for suite in ET.parse(path).getroot().iter("testsuite"):
        for k in tot:
            tot[k] += int(suite.get(k, 0))
passed = tot["tests"] - tot["failures"] - tot["errors"] - tot["skipped"]
aborted = os.path.join(sys.argv[1], "aborted.txt")
lines = open(aborted).read().splitlines() if os.path.exists(aborted) else []
# The same test failing on several ranks is one failure; the rest of its job did not report.
tests = {line.split(" FAILED ", 1)[1] for line in lines if line.startswith("[rank ") and " FAILED " in line}
unreported = f" (+ {len(tests)} that aborted an MPI job, whose other tests are not counted)" if tests else ""
print(f"tests: {passed} passed, {tot['failures'] + tot['errors']} failed{unreported}, {tot['skipped']} skipped")
PY
if [ "${#failed_runs[@]}" -gt 0 ]; then
  echo "FAILED runs: ${failed_runs[*]}"
  exit 1
fi
