#!/usr/bin/env bash
# The main job on this machine: set up (first run only), then solve the embedded default
# generalized eigenproblem with `python -m solvers.sygvd --check` under MPI.
# One rank per GPU when GPUs are visible, else 4 CPU ranks. Extra arguments go to the solver
# (see `python -m solvers.sygvd --help`); RANKS=<n> overrides the rank count.
set -euo pipefail
# The main job needs no test tools (tests/run.sh installs them when it runs).
HPCOLLS_TEST_TOOLS="${HPCOLLS_TEST_TOOLS:-0}" source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ngpu="$("$HPCOLLS_PY" -c 'import hpcolls; print(hpcolls.device_count())')"
ranks="${RANKS:-$([ "$ngpu" -gt 0 ] && echo "$ngpu" || echo 4)}"
echo "[run] $ranks MPI rank(s), $ngpu GPU(s) visible: mpiexec -n $ranks python -m solvers.sygvd --check $*" >&2
exec env LD_PRELOAD="$HPCOLLS_LD_PRELOAD" "${HPCOLLS_MPIEXEC[@]}" -n "$ranks" "$HPCOLLS_PY" -m solvers.sygvd --check "$@"
