#!/usr/bin/env bash
# Installs dependencies (Debian 12, apt; idempotent) and builds tandem.
# Usage: scripts/build.sh [BUILD_DIR] [--target T]... [extra cmake args...]
#   BUILD_DIR defaults to build/. With no --target everything is built (the
#   binary, every test and the test data); `--target tandem` builds only the
#   binary and the libraries it links. Extra cmake args apply when BUILD_DIR
#   is configured for the first time.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
shift || true
targets=()
cmake_args=()
while (($#)); do
  case "$1" in
    --target) targets+=(--target "$2"); shift 2 ;;
    *) cmake_args+=("$1"); shift ;;
  esac
done
bash "$root/scripts/install-deps.sh"
jobs=$(nproc)
if [[ ! -f "$dir/build.ninja" ]]; then
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cmake_args[@]}"
fi
cmake --build "$dir" -j "$jobs" "${targets[@]}"
