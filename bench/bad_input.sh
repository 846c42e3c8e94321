#!/usr/bin/env bash
# Bad input in bulk (issue 13 part 4): replays the fuzz corpora of the
# public parsers (fuzz/corpus/{http_request,openai_request}, plus what
# scripts/fuzz.sh grew under FUZZ_BUILD/corpus/) against a running `tandem
# serve`: the server must never die and every reply must be a well-formed
# HTTP response (an OpenAI error body for every error status). JSON to OUT.
#   bench/bad_input.sh BUILD_DIR [FUZZ_BUILD_DIR=build-fuzz] [OUT=bad_input.json]
# Needs the e2e npm clients (tests/e2e/run.sh BUILD_DIR --setup). SMOKE=1:
# the repository's seeds only.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
build="$(cd "$1" && pwd)"
fuzz_build="$(realpath -m "${2:-$root/build-fuzz}")"
out="$(realpath -m "${3:-bad_input.json}")"
work="$build/e2e/bad_input"
[[ -d "$build/e2e/node_modules" ]] || { echo "bad_input.sh: run tests/e2e/run.sh $build --setup first" >&2; exit 1; }
mkdir -p "$work"
cp "$root/tests/e2e/harness.mjs" "$here/bad_input.mjs" "$work"/
dirs=("$root/fuzz/corpus/http_request" "$root/fuzz/corpus/openai_request")
if [[ "${SMOKE:-0}" != 1 ]]; then
  for t in http_request openai_request; do
    [[ -d "$fuzz_build/corpus/$t" ]] && dirs+=("$fuzz_build/corpus/$t")
  done
fi
export TANDEM_BINARY="$build/tandem" TANDEM_SOURCE_DIR="$root"
cd "$work"
exec node bad_input.mjs "$out" "${dirs[@]}"
