#!/usr/bin/env bash
# The end-to-end tests: the built `tandem` binary driven by the pinned npm
# clients (openai, @grpc/grpc-js).
#   run.sh BUILD_DIR --setup        installs the clients into BUILD_DIR/e2e
#   run.sh BUILD_DIR [FILE.test.mjs] runs node's test runner on the tests
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(cd "$1" && pwd)"
work="$build/e2e"
if [[ "${2:-}" == --setup ]]; then
  mkdir -p "$work"
  cp "$here"/package.json "$here"/package-lock.json "$work"/
  if ! cmp -s "$here/package-lock.json" "$work/node_modules/.installed-lock" 2>/dev/null; then
    (cd "$work" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$here/package-lock.json" "$work/node_modules/.installed-lock"
  fi
  exit 0
fi
# the tests run from the install dir so that imports find node_modules.
cp "$here"/*.mjs "$work"/
rm -rf "$work/protos" && cp -r "$here/protos" "$work/protos"
export TANDEM_BINARY="${TANDEM_BINARY:-$build/tandem}"
export TANDEM_SOURCE_DIR="$(cd "$here/../.." && pwd)"
cd "$work"
exec node --test --test-concurrency=1 ${2:-*.test.mjs}
