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
source "$here/lib/e2e_setup.sh"
out="$(realpath -m "${4:-faults.json}")"
e2e_setup faults "$1" "$e2e_root/tests/integration/cluster.mjs" "$here/faults.mjs"
exec node faults.mjs "${2:-16}" "${3:-10}" "$out" ${5:-}
