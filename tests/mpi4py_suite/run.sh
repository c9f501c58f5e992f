#!/usr/bin/env bash
# mpi4py's own test suite through hpcolls: runs test modules of the installed mpi4py version's
# sdist twice at N ranks, first as mpi4py runs them (the reference), then with hpcolls.wrap(...)
# as every COMM_WORLD- and COMM_SELF-based test class's communicator (runner.py says how), and fails unless
# every test's outcome is the same in both (compare.py prints which ones differ).
#
#   bash tests/mpi4py_suite/run.sh [--ranks 3] [--modules "test_cco_buf test_comm ..."]
#        [--wrapper hpcolls|identity] [--arrays host|cupy|all] [--reference-arrays host|cupy|all]
#        [--python PY] [--cache DIR] [--out DIR] [--fetch-only] [--mpi4py-version V]
#        [--known FILE|none] [--write-known FILE] [--timeout-factor 3]
#
# --wrapper identity puts MPI.Intracomm(comm) where hpcolls.wrap(comm) would go: a check of the
# harness itself (both runs must agree). --arrays picks mpi4py's array backends for the wrapped
# run (host: array, numpy, DLPack on CPU and the fake-GPU arrays; cupy: cupy's, on a GPU
# machine), --reference-arrays those of the reference run (default: the same). With cupy arrays
# on an MPI that is not CUDA-aware the reference run has to use host arrays (plain mpi4py would
# hand MPI device pointers), and then only each test's outcome is compared, not its count of
# skipped subtests (the backends differ).
# Without --python the repository's .venv is used (jobs/local/setup.sh); with it, that python and
# the mpiexec on PATH (the GPU machine's way). The sdist is downloaded once with pip into --cache
# (default .venv/mpi4py-suite); --fetch-only stops there (for a machine that cannot reach PyPI,
# fetch where it can, with --mpi4py-version that machine's version, and bring the cache along).
# The wrapped run has hpcolls' PMPI staging library in LD_PRELOAD (`python -m hpcolls preload`:
# mpi4py's own Message, Datatype.Pack* and Op.Reduce_local calls stage device buffers, as on the
# GPU machine they must); the plain run has it removed from LD_PRELOAD, so it is mpi4py alone.
# Results and logs go to --out (default: a new temporary directory, printed). Each module runs
# under its own mpiexec, bounded by timeout(1): 600 s plain, then F times that plus 60 s wrapped
# (--timeout-factor F, default 3).
# --known: tests listed there (ids or fnmatch patterns) are reported apart as known differences
# and do not fail the run (default with --wrapper hpcolls and host arrays in both runs:
# known_differences.txt next to this script, when it exists, else none: then every test's
# outcome must equal the plain run's; the file is absent while no difference is known);
# --write-known writes this run's differences in that format.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
here="$repo/tests/mpi4py_suite"
ranks=3
modules="test_cco_buf test_cco_nb_buf test_cco_vec test_cco_nb_vec test_cco_obj test_cco_ngh_buf
test_p2p_buf test_p2p_obj test_p2p_buf_matched test_comm test_msgzero test_pack test_rma test_win
test_attributes test_util_sync"
wrapper=hpcolls
arrays=host
reference_arrays=""
python=""
cache="$repo/.venv/mpi4py-suite"
out=""
fetch_only=0
known=""
write_known=""
version=""
timeout_factor=3
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks="$2"; shift 2 ;;
    --modules) modules="$2"; shift 2 ;;
    --wrapper) wrapper="$2"; shift 2 ;;
    --arrays) arrays="$2"; shift 2 ;;
    --reference-arrays) reference_arrays="$2"; shift 2 ;;
    --python) python="$2"; shift 2 ;;
    --cache) cache="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --fetch-only) fetch_only=1; shift ;;
    --known) known="$2"; shift 2 ;;
    --write-known) write_known="$2"; shift 2 ;;
    --mpi4py-version) version="$2"; shift 2 ;;
    --timeout-factor) timeout_factor="$2"; shift 2 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 0 ;;
    *) echo "mpi4py_suite: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
reference_arrays="${reference_arrays:-$arrays}"
if [ -z "$known" ] && [ "$wrapper" = hpcolls ] && [ "$arrays$reference_arrays" = hosthost ] && [ -f "$here/known_differences.txt" ]; then
  known="$here/known_differences.txt"
fi

if [ -z "$python" ]; then
  source "$repo/jobs/local/setup.sh" || { echo "mpi4py_suite: set-up failed" >&2; exit 1; }
  set +e
  python="$HPCOLLS_PY"
  mpiexec=("${HPCOLLS_MPIEXEC[@]}")
else
  mpiexec=(mpiexec --oversubscribe)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Several ranks share few cores: one BLAS thread per process.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}" PYTHONUNBUFFERED=1

installed="$("$python" -c 'import mpi4py; print(mpi4py.__version__)')" || { echo "mpi4py_suite: mpi4py does not import" >&2; exit 1; }
version="${version:-$installed}"
if [ "$version" != "$installed" ] && [ "$fetch_only" = 0 ]; then
  echo "mpi4py_suite: --mpi4py-version $version but mpi4py $installed is installed: tests must match it" >&2; exit 2
fi
sdist="$cache/mpi4py-$version.tar.gz"
test_dir="$cache/mpi4py-$version/test"
if [ ! -f "$sdist" ]; then
  echo "== mpi4py_suite: downloading the sdist of mpi4py $version into $cache"
  mkdir -p "$cache"
  # Only mpi4py from source: pip prepares its metadata with binary build tools (--no-binary
  # :all: would compile Cython from source first, many minutes here).
  if ! "$python" -m pip download --disable-pip-version-check -q --no-deps --no-binary mpi4py \
       -d "$cache" "mpi4py==$version" >"$cache/download.log" 2>&1 || [ ! -f "$sdist" ]; then
    grep -v "is ignored" "$cache/download.log" | tail -20
    echo "mpi4py_suite: could not download mpi4py==$version's sdist (PyPI unreachable? fetch it" \
         "elsewhere with --fetch-only and bring $cache along)" >&2
    exit 1
  fi
fi
if [ ! -f "$test_dir/mpiunittest.py" ]; then
  tar -xzf "$sdist" -C "$cache" "mpi4py-$version/test" || { echo "mpi4py_suite: cannot unpack $sdist" >&2; exit 1; }
fi
[ "$fetch_only" = 1 ] && { echo "mpi4py_suite: $test_dir ready"; exit 0; }

preload_lib=""
if [ "$wrapper" = hpcolls ]; then
  preload_lib="$("$python" -m hpcolls preload)" || { echo "mpi4py_suite: hpcolls has no PMPI staging library to preload" >&2; exit 1; }
fi
# LD_PRELOAD without the staging library (whatever else the caller preloads stays).
plain_preload="$(printf '%s' "${LD_PRELOAD:-}" | tr ' :' '\n' | grep -v -e '^$' -e '/libhpcolls_pmpi_staging\.so$' | paste -sd:)"

out="${out:-$(mktemp -d /tmp/mpi4py-suite.XXXXXX)}"
reference="$out/plain-$reference_arrays"
candidate="$out/$wrapper-$arrays"
rm -rf "$reference" "$candidate"
mkdir -p "$reference" "$candidate"
echo "== mpi4py $version's tests at $ranks ranks: plain ($reference_arrays arrays), then $wrapper ($arrays arrays); results in $out"

run_module() {  # run_module DIR MODULE SECONDS WRAPPER ARRAYS: one module under mpiexec
  local dir="$1" module="$2" seconds="$3" preload="$plain_preload"
  [ "$4" = none ] || preload="$preload_lib${plain_preload:+:$plain_preload}"
  LD_PRELOAD="$preload" timeout --kill-after=10 "$seconds" "${mpiexec[@]}" -n "$ranks" "$python" "$here/runner.py" \
    --test-dir "$test_dir" --module "$module" --out "$dir" --wrapper "$4" --arrays "$5" \
    >"$dir/$module.log" 2>&1
  echo $? >"$dir/$module.status"
}

for module in $modules; do
  start=$SECONDS
  run_module "$reference" "$module" 600 none "$reference_arrays"
  plain_s=$((SECONDS - start))
  # The wrapped run may hang where the plain one did not: allow it a few times as long.
  start=$SECONDS
  run_module "$candidate" "$module" $((timeout_factor * plain_s + 60)) "$wrapper" "$arrays"
  printf '%-22s plain: exit %s, %3d s   %s: exit %s, %3d s\n' "$module" "$(cat "$reference/$module.status")" \
    "$plain_s" "$wrapper" "$(cat "$candidate/$module.status")" $((SECONDS - start))
  for dir in "$reference" "$candidate"; do
    if [ "$(cat "$dir/$module.status")" != 0 ]; then
      echo "   last lines of $dir/$module.log:"
      grep -v "^\s*$" "$dir/$module.log" | tail -6 | sed 's/^/   | /' | grep . || echo "   | (none)"
    fi
  done
done

compare_args=()
[ "$reference_arrays" != "$arrays" ] && compare_args+=(--outcome-only)
[ -n "$known" ] && [ "$known" != none ] && compare_args+=(--known "$known")
[ -n "$write_known" ] && compare_args+=(--write-known "$write_known")
# shellcheck disable=SC2086  # modules is a list of words
"$python" "$here/compare.py" "$reference" "$candidate" --ranks "$ranks" --modules $modules \
  --names "plain" "$wrapper" "${compare_args[@]}"
