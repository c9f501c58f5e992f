#!/usr/bin/env bash
# The Fortran programs of fortran_mpi.sh on a GPU machine, on memory on the GPU
# (HPCOLLS_TEST_DEVICE=cuda: fortran_support.c): every collective the PMPI library takes, through
# each of MPI's Fortran interfaces, with the library's kernels, each result equal bitwise to the
# same call on host arrays. The machine needs no Fortran compiler: the programs are built where
# one is (HPCOLLS_FORTRAN_KEEP=DIR bash tests/pmpi/fortran_mpi.sh LIB keeps them in DIR) against
# an Open MPI of the same series as this machine's, and run here at 1, 2 and 4 ranks.
#   bash tests/pmpi/fortran_gpu.sh DIR [LIBRARY]      (LIBRARY: default `python -m hpcolls preload`)
set -uo pipefail
dir="${1:?usage: fortran_gpu.sh DIR [LIBRARY]}"
lib="${2:-$(${PY:-python3} -m hpcolls preload)}" || { echo "FAIL: no PMPI library"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 HPCOLLS_TEST_DEVICE=cuda
# The library's settings of this environment (HPCOLLS_PMPI_WAIT, ...) go to every rank.
forward=()
for name in $(compgen -e | grep '^HPCOLLS_'); do forward+=(-x "$name"); done
status=0
ran=0
for v in mpifh use_mpi use_mpi_f08; do
  [ -x "$dir/$v" ] || continue
  for n in 1 2 4; do
    out="$(timeout 300 mpiexec --oversubscribe -n $n -x LD_PRELOAD="$lib" "${forward[@]}" "$dir/$v" 2>&1)"
    rc=$?
    line="$(grep -E '^(ok|FAIL)' <<<"$out" | head -1)"
    if [ $rc -ne 0 ] || [[ "$line" != ok* ]] || ! grep -q ' [1-9][0-9]* calls on device arrays' <<<"$line"; then
      why="$(grep -m1 'HPCOLLS_TEST_DEVICE=cuda:' <<<"$out")"
      echo "FAIL: Fortran $v at $n ranks on GPU memory (rc $rc): ${line:-${why:-$(tail -5 <<<"$out")}}"; status=1
      # Which calls failed: per collective, then the first few in full.
      grep -o ': FAIL [A-Za-z_]*' <<<"$out" | sort | uniq -c | sed 's/^/    /'
      grep -m 8 ': FAIL ' <<<"$out" | sed 's/^/    /'
    else
      echo "ok: Fortran $v at $n ranks on GPU memory: ${line#ok*: }"
    fi
    ran=$((ran + 1))
  done
done
[ $ran -gt 0 ] || { echo "FAIL: no Fortran programs in $dir"; exit 1; }
exit $status
