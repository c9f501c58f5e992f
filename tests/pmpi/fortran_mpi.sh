#!/usr/bin/env bash
# The Fortran test of the PMPI library (collectives_fortran.f90, `use mpi`): built with an MPI
# Fortran wrapper (mpifort or mpif90 on PATH, or $MPIFORT) and run at 1 and 2 ranks without and
# with the library (argument 1: its path), whose outputs must be the same. Where no wrapper is
# found it prints SKIP with the reason and exits 0: PyPI's Open MPI (the venv's, and CI's) has no
# Fortran bindings, and this script does not install a compiler. A machine with Debian's
# gfortran and libopenmpi-dev (apt-get install gfortran libopenmpi-dev) runs it; the device-buffer
# Fortran path is the C path after handle conversion (native/pmpi_staging/fortran_entry_points.cpp).
set -uo pipefail
lib="${1:?usage: fortran_mpi.sh LIBRARY}"
here="$(cd "$(dirname "$0")" && pwd)"
fc="${MPIFORT:-$(command -v mpifort || command -v mpif90 || true)}"
if [ -z "$fc" ]; then
  echo "SKIP: Fortran: no MPI Fortran wrapper (mpifort/mpif90) here; PyPI's Open MPI has no Fortran bindings (install gfortran and libopenmpi-dev to run it)"
  exit 0
fi
launcher="$(dirname "$fc")/mpiexec"; [ -x "$launcher" ] || launcher=mpiexec
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
"$fc" -O1 -o "$work/collectives_fortran" "$here/collectives_fortran.f90" || { echo "FAIL: Fortran: $fc could not build the test"; exit 1; }
status=0
for n in 1 2; do
  plain="$(timeout 120 "$launcher" --oversubscribe -n $n "$work/collectives_fortran")" || { echo "FAIL: Fortran at $n ranks without the library"; status=1; }
  with="$(timeout 120 "$launcher" --oversubscribe -n $n -x LD_PRELOAD="$lib" "$work/collectives_fortran")" || { echo "FAIL: Fortran at $n ranks with the library"; status=1; }
  if [ -n "$plain" ] && [ "$plain" = "$with" ]; then echo "ok: Fortran at $n ranks, the same with and without the library"
  else echo "FAIL: Fortran at $n ranks: outputs differ"; status=1; fi
done
exit $status
