#!/usr/bin/env bash
# Quick start: installs dependencies, builds tandem and runs it on the
# embedded default model (models/stories260K).
# Usage: scripts/run.sh [extra args for tandem generate, e.g. --temperature 0.8 --seed 1]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh" "$root/build"
tandem="$root/build/tandem"
model="$root/models/stories260K/gguf/stories260K.gguf"

echo "== tandem model inspect $model"
"$tandem" model inspect "$model"
echo "== tandem model tokenize --text 'Once upon a time'"
"$tandem" model tokenize --model "$model" --text "Once upon a time"
echo "== tandem generate --prompt 'Once upon a time' --max-tokens 64"
"$tandem" generate --model "$model" --prompt "Once upon a time" --max-tokens 64 "$@"
