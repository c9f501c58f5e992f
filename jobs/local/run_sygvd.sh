#!/usr/bin/env bash
# The main job on this machine: set up (first run only), then solve the embedded default
# generalized eigenproblem with `python -m solvers.sygvd --method distributed --check` under MPI:
# the distributed stages, which 'auto' leaves to one LAPACK call at this small order on CPUs and
# at one rank (its stage table shows where the time goes). One rank per GPU when GPUs are
# visible, else 4 CPU ranks. Extra arguments go to the solver and win (`--method auto`; see
# `python -m solvers.sygvd --help`); RANKS=<n> overrides the rank count.
set -euo pipefail
# The main job needs no test tools (tests/run.sh installs them when it runs).
HPCOLLS_TEST_TOOLS="${HPCOLLS_TEST_TOOLS:-0}" source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ngpu="$("$HPCOLLS_PY" -c 'import hpcolls; print(hpcolls.device_count())')"
ranks="${RANKS:-$([ "$ngpu" -gt 0 ] && echo "$ngpu" || echo 4)}"
solver=(-m solvers.sygvd --method distributed --check "$@")
echo "[run] $ranks MPI rank(s), $ngpu GPU(s) visible: mpiexec -n $ranks python ${solver[*]}" >&2
exec env LD_PRELOAD="$HPCOLLS_LD_PRELOAD" "${HPCOLLS_MPIEXEC[@]}" -n "$ranks" "$HPCOLLS_PY" "${solver[@]}"
