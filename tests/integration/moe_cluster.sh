#!/usr/bin/env bash
# The disaggregation fault tests and the KV-tier restart test
# (tests/integration) on a synthetic mixture of experts instead of
# stories260K: the Qwen3-MoE of models/moe (8 experts choose 2, F32) and
# llama.cpp's tokens for it, through 1 prefill + 2 decode workers.
#   tests/integration/moe_cluster.sh BUILD_DIR [NAME-DTYPE]
# BUILD_DIR as tests/integration/run.sh takes it (tandem, tandem_fault_worker,
# e2e/node_modules). NAME-DTYPE: an oracle of models/moe (qwen3moe_e8-f32).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
which=${2:-qwen3moe_e8-f32}
oracle=$root/models/moe/greedy_oracle_$which.json
shape=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['synth_shape'])" "$oracle")
dtype=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['synth_dtype'])" "$oracle")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/tandem" model synth --out "$work/moe.gguf" --format gguf --dtype "$dtype" --shape "$shape" \
  --vocab-from "$root/models/stories260K/gguf/stories260K.gguf" > /dev/null
# its KV bytes a token (f32 cache): layers x KV heads x head dim x K,V x 4
kv_bytes=$(python3 -c "
import sys
s = dict(kv.split('=') for kv in sys.argv[1].split(','))
head_dim = int(s.get('head_dim', int(s['dim']) // int(s['heads'])))
print(int(s['layers']) * int(s['kv_heads']) * head_dim * 2 * 4)" "$shape")
export TANDEM_TEST_MODEL=$work/moe.gguf TANDEM_TEST_ORACLE=$oracle TANDEM_TEST_KV_BYTES_PER_TOKEN=$kv_bytes
for t in fault_prefill fault_decode kv_disk_restart; do
  bash "$root/tests/integration/run.sh" "$build" "$t.test.mjs"
done
