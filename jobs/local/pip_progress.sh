#!/usr/bin/env bash
# Reads `pip install -v` of hpcolls (scikit-build-core, CMake, ninja) on stdin, keeps all of it in
# the file named by $1, and says on stderr what the install is doing: each package fetched (from an
# index or as a local wheel), the configure, the compile (ninja's [k/n] steps) and the install. On
# a terminal one status line is rewritten in place; elsewhere (CI logs) a line is printed per phase
# and per quarter of the compile.
set -uo pipefail
log="$1"
: >"$log"
start=$SECONDS
tty=0; [[ -t 2 ]] && tty=1
quarter=0

show() {  # show TEXT [KEEP]: KEEP=1 prints the line on a log too, not only on a terminal
  if [[ $tty == 1 ]]; then
    printf '\r\033[K[setup]   %s' "$1" >&2
  elif [[ ${2:-0} == 1 ]]; then
    echo "[setup]   $1" >&2
  fi
}

while IFS= read -r line; do
  printf '%s\n' "$line" >>"$log"
  case "$line" in
    Collecting\ *) show "fetching ${line#Collecting }" 1 ;;
    Processing\ *.whl*) wheel=${line%%.whl*}; IFS=- read -r name version _ <<<"${wheel##*/}"; show "fetching $name $version" 1 ;;
    *"*** Configuring CMake"*) show "configuring the build (CMake)" 1 ;;
    "Installing collected packages"*) show "installing into the venv" 1 ;;
    *) if [[ $line =~ ^[[:space:]]*\[([0-9]+)/([0-9]+)\]\ (Building|Linking) ]]; then
         done_steps=${BASH_REMATCH[1]} all=${BASH_REMATCH[2]} what=${line##*[ /]}
         keep=0
         if (( all > 4 && done_steps * 4 >= (quarter + 1) * all )); then quarter=$((quarter + 1)); keep=1; fi
         show "compiling: $done_steps/$all steps, $((SECONDS - start)) s (${what%.o})" "$keep"
       fi ;;
  esac
done
[[ $tty == 1 ]] && echo >&2
exit 0
