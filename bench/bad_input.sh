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
source "$here/lib/e2e_setup.sh"
fuzz_build="$(realpath -m "${2:-$e2e_root/build-fuzz}")"
out="$(realpath -m "${3:-bad_input.json}")"
dirs=("$e2e_root/fuzz/corpus/http_request" "$e2e_root/fuzz/corpus/openai_request")
if [[ "${SMOKE:-0}" != 1 ]]; then
  for t in http_request openai_request; do
    [[ -d "$fuzz_build/corpus/$t" ]] && dirs+=("$fuzz_build/corpus/$t")
  done
fi
e2e_setup bad_input "$1" "$e2e_root/tests/e2e/harness.mjs" "$here/bad_input.mjs"
exec node bad_input.mjs "$out" "${dirs[@]}"
