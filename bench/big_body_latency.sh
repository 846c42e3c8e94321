#!/usr/bin/env bash
# Large bodies must not stall small requests (issue 36): p50/p99 latency of a
# small completion (~4 ms alone) while CLIENTS clients keep sending MB-sized
# prompts, against a real `tandem serve`; the median over REPEATS runs of
# SECONDS each. JSON to OUT.
#   bench/big_body_latency.sh BUILD_DIR [REPEATS=5] [SECONDS=10] [CLIENTS=4] [MB=3.9] [OUT=big_body_latency.json]
# Needs the e2e npm clients (tests/e2e/run.sh BUILD_DIR --setup).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/lib/e2e_setup.sh"
out="$(realpath -m "${6:-big_body_latency.json}")"
e2e_setup big_body_latency "$1" "$e2e_root/tests/e2e/harness.mjs" "$here/big_body_latency.mjs"
exec node big_body_latency.mjs "$out" "${2:-5}" "${3:-10}" "${4:-4}" "${5:-3.9}"
