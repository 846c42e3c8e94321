#!/usr/bin/env bash
# Quick start: installs dependencies, builds the tandem binary (only it: the
# tests are built by scripts/test.sh) and serves the embedded
# default model (models/stories260K) over the OpenAI HTTP API on
# http://127.0.0.1:8000 and the tandem gRPC API on 127.0.0.1:8001.
# Ctrl-C stops it (requests in progress finish first).
# Usage: scripts/run.sh [extra args for tandem serve, e.g. --http-port 9000 --model PATH]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh" "$root/build" --target tandem
cat <<'MSG'
== tandem serve: try, from another terminal,
  curl http://127.0.0.1:8000/v1/completions -H 'Content-Type: application/json' \
    -d '{"model": "stories260K", "prompt": "Once upon a time", "max_tokens": 48, "temperature": 0}'
MSG
exec "$root/build/tandem" serve "$@"
