#!/usr/bin/env bash
# Installs dependencies (Debian 12, apt; idempotent) and builds tandem.
# Usage: scripts/build.sh [BUILD_DIR] [extra cmake args...]   (default: build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/build}
shift || true
bash "$root/scripts/install-deps.sh"
jobs=$(nproc)
if [[ ! -f "$dir/build.ninja" ]]; then
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build "$dir" -j "$jobs"
