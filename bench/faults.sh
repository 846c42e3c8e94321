#!/usr/bin/env bash
# Faults during load (issue 13 part 4): router + 2 P + 2 D on loopback under
# CLIENTS closed-loop greedy streams; each fault in turn (SIGKILL / SIGSTOP of
# each process kind, a slow worker, corrupted disk KV records, a router
# restart) for FAULT_S seconds. Per fault: requests lost, tokens changed,
# recovery time (bench/faults.mjs says how each is measured); JSON to OUT.
#   bench/faults.sh BUILD_DIR [CLIENTS=16] [FAULT_S=10] [OUT=faults.json] [FAULT]
# Needs the e2e npm clients (tests/e2e/run.sh BUILD_DIR --setup).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "$1" && pwd)"
out="$(realpath -m "${4:-faults.json}")"
work="$build/e2e/faults"
[[ -d "$build/e2e/node_modules" ]] || { echo "faults.sh: run tests/e2e/run.sh $build --setup first" >&2; exit 1; }
mkdir -p "$work"
cp "$here/../tests/integration/cluster.mjs" "$here/faults.mjs" "$work"/
export TANDEM_BINARY="$build/tandem" TANDEM_SOURCE_DIR="$(cd "$here/.." && pwd)"
ulimit -n 65536 2>/dev/null || true
cd "$work"
exec node faults.mjs "${2:-16}" "${3:-10}" "$out" ${5:-}
