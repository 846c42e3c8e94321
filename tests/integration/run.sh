#!/usr/bin/env bash
# The integration tests: real `tandem router` / `tandem worker` / `tandem
# serve` processes on loopback, driven with @grpc/grpc-js. They use the npm
# clients the e2e fixture installed into BUILD_DIR/e2e (tests/e2e/run.sh
# BUILD_DIR --setup).
#   run.sh BUILD_DIR [FILE.test.mjs]
# Each process's output lands in BUILD_DIR/e2e/integration/logs/<test>/.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "$1" && pwd)"
# below the e2e install: imports find its node_modules.
work="$build/e2e/integration"
if [[ ! -d "$build/e2e/node_modules" ]]; then
  echo "run.sh: $build/e2e/node_modules is missing; run tests/e2e/run.sh $build --setup" >&2
  exit 1
fi
mkdir -p "$work"
cp "$here"/*.mjs "$work"/
export TANDEM_BINARY="${TANDEM_BINARY:-$build/tandem}"
export TANDEM_FAULT_WORKER_BINARY="${TANDEM_FAULT_WORKER_BINARY:-$build/tandem_fault_worker}"
export TANDEM_SOURCE_DIR="$(cd "$here/../.." && pwd)"
cd "$work"
if [[ -n "${2:-}" ]]; then rm -rf "logs/${2%.test.mjs}"; fi
exec node --test --test-concurrency=1 ${2:-*.test.mjs}
