#!/usr/bin/env bash
# Soak test (issue 13 part 4): CLIENTS concurrent streaming clients against a
# real router + prefill + decode on loopback for DURATION seconds, DISCONNECT
# of the requests cut by their client mid-stream. Prints progress every 10 s
# and writes the figures (errors beyond the injected, RSS and fds per process
# over time, KV blocks returned) to OUT.
#   bench/soak.sh BUILD_DIR [CLIENTS=1000] [DURATION_S=600] [DISCONNECT=0.1] [OUT=soak.json]
# Needs the e2e npm clients (tests/e2e/run.sh BUILD_DIR --setup).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "$1" && pwd)"
out="$(realpath -m "${5:-soak.json}")"
work="$build/e2e/soak"
[[ -d "$build/e2e/node_modules" ]] || { echo "soak.sh: run tests/e2e/run.sh $build --setup first" >&2; exit 1; }
mkdir -p "$work"
cp "$here/../tests/integration/cluster.mjs" "$here/soak.mjs" "$work"/
export TANDEM_BINARY="$build/tandem" TANDEM_SOURCE_DIR="$(cd "$here/.." && pwd)"
ulimit -n 65536 2>/dev/null || true
cd "$work"
exec node soak.mjs "${2:-1000}" "${3:-600}" "${4:-0.1}" "$out"
