#!/usr/bin/env bash
# Writes the MoE oracles of this directory: each synthetic model (shapes
# below, seed 0, stories260K's vocabulary) in f32, f16 and q8_0 as tandem
# writes it, completed greedily by llama.cpp.
#   models/moe/make_oracles.sh GREEDY_IDS TANDEM
# GREEDY_IDS: models/stories260K/llamacpp/greedy_ids.cpp built against
# libllama (see models/stories260K/README.md); TANDEM: the tandem binary.
set -euo pipefail
greedy=$1 tandem=$2
here=$(cd "$(dirname "$0")" && pwd)
vocab=$here/../stories260K/gguf/stories260K.gguf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
base=dim=64,layers=2,heads=4,kv_heads=2,ffn=96,expert_ffn=64
declare -A shapes=(
  [qwen3moe_e8]=$base,arch=qwen3moe,experts=8,experts_used=2
  [mixtral_e8]=$base,arch=mixtral,experts=8,experts_used=2
  [qwen3moe_e64]=dim=128,layers=2,heads=4,kv_heads=2,ffn=96,expert_ffn=64,arch=qwen3moe,experts=64,experts_used=8
)
for name in qwen3moe_e8 mixtral_e8 qwen3moe_e64; do
  for dtype in f32 f16 q8_0; do
    "$tandem" model synth --out "$work/$name-$dtype.gguf" --format gguf --dtype "$dtype" \
      --shape "${shapes[$name]}" --vocab-from "$vocab" > /dev/null
    python3 "$here/make_oracle.py" "$greedy" "$work/$name-$dtype.gguf" "$name-$dtype" \
      "${shapes[$name]}" "$dtype" 24 "$here/greedy_oracle_$name-$dtype.json"
  done
done
