#!/usr/bin/env bash
# Several trees side by side on the GPU machine, each with its own prebuilt modules, so that one
# device call compares them (every call may start a fresh machine: timings compare only within
# a call).
#
#   here:   PYTHON=python3.12 bash tests/device_trees.sh pack DIR NAME=REF [NAME=REF ...]
#   there:  bash DIR/device_trees.sh unpack DIR
#
# pack: for each git REF, its tree (`git archive`) as DIR/NAME.tgz and its modules, built from a
# worktree of REF by tests/prebuild_modules.sh (in $DEVICE_TREES_BUILD/NAME, default
# /tmp/device-trees/NAME, kept so that a second pack recompiles only what changed; its venv is
# $DEVICE_TREES_VENV where set, for a machine without PyPI), as DIR/NAME/*.so; this script too.
# Carry DIR (the device allows 64 MiB: about 14 MiB a tree).
# unpack: each DIR/NAME.tgz into /tmp/trees/NAME with its modules in place, ready to import from
# there (PYTHONPATH=/tmp/trees/NAME:/tmp/trees/NAME/tests/gpu). Steps files name the trees by
# that path; run the harness from the first one, e.g.
#   cd /tmp/trees/branch && bash tests/gpu_harness.sh --modules DIR/branch --steps FILE --deadline 540
set -euo pipefail
usage() { sed -n '2,/^[^#]/{/^#/p}' "$0"; exit 2; }
[ $# -ge 2 ] || usage
command="$1" dir="$2"
shift 2
case "$command" in
  pack)
    [ $# -ge 1 ] || usage
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    mkdir -p "$dir"
    cp "${BASH_SOURCE[0]}" "$dir/device_trees.sh"
    : >"$dir/trees.txt"
    for pair in "$@"; do
      name="${pair%%=*}" ref="${pair#*=}"
      [ -n "$name" ] && [ "$name" != "$pair" ] || { echo "device_trees: NAME=REF, got $pair" >&2; exit 2; }
      build="${DEVICE_TREES_BUILD:-/tmp/device-trees}/$name"
      mkdir -p "$build"
      if [ -n "${DEVICE_TREES_VENV:-}" ]; then ln -sfn "$DEVICE_TREES_VENV" "$build/venv"; fi
      worktree="$build/worktree"
      git -C "$repo" worktree remove --force "$worktree" 2>/dev/null || true
      git -C "$repo" worktree add --detach "$worktree" "$ref" >/dev/null
      bash "$worktree/tests/prebuild_modules.sh" "$build" | tail -1
      git -C "$repo" worktree remove --force "$worktree"
      rm -rf "${dir:?}/$name"
      mkdir -p "$dir/$name"
      cp "$build"/*.so "$dir/$name/"
      git -C "$repo" archive "$ref" | gzip >"$dir/$name.tgz"
      echo "$name: $(git -C "$repo" rev-parse --short "$ref") ($ref)" | tee -a "$dir/trees.txt"
    done
    du -sh "$dir"
    ;;
  unpack)
    for archive in "$dir"/*.tgz; do
      name="$(basename "$archive" .tgz)"
      tree="/tmp/trees/$name"
      rm -rf "$tree"
      mkdir -p "$tree"
      tar xzf "$archive" -C "$tree"
      cp "$dir/$name"/_native*.so "$dir/$name/libhpcolls_pmpi_staging.so" "$tree/hpcolls/"
      for module in "$dir/$name"/_host_entry*.so; do  # trees before the host entry have none
        if [ -e "$module" ]; then cp "$module" "$tree/hpcolls/"; fi
      done
      cp "$dir/$name"/_kernels*.so "$tree/solvers/"
      echo "$tree"
    done
    ;;
  *) usage ;;
esac
