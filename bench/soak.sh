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
source "$here/lib/e2e_setup.sh"
out="$(realpath -m "${5:-soak.json}")"
e2e_setup soak "$1" "$e2e_root/tests/integration/cluster.mjs" "$here/soak.mjs"
exec node soak.mjs "${2:-1000}" "${3:-600}" "${4:-0.1}" "$out"
