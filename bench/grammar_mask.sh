#!/usr/bin/env bash
# Structured output's per-token cost on the Llama 3 (128k) and Qwen3 (151k)
# vocabularies (mask lookup + applying it to the logit row + advancing the
# matcher), after warm-up (median of REPEATS) and cold, against the decode
# step of a stories110M-shape synthetic Llama (dim 768, 12 layers, 12 heads,
# ffn 2048, vocab 32000) measured in the same run.
#
#   bench/grammar_mask.sh GRAMMAR_MASK_BENCH TANDEM_BINARY TOKENIZERS_DIR
#
# TOKENIZERS_DIR holds llama3/ and qwen3/ (build/testdata after the build,
# or ../shared/tokenizers). Environment: REPEATS (5), THREADS (2), WALKS (40
# random walks a grammar), OUT_DIR. SMOKE=1: a tiny model, 1 repeat, 2 walks:
# checks the script.
set -euo pipefail
if [[ $# -lt 3 ]]; then sed -n '2,13p' "$0" >&2; exit 2; fi
bench=$(realpath "$1") tandem=$(realpath "$2") toks=$(realpath "$3")
shape=dim=768,layers=12,heads=12,kv_heads=12,ffn=2048,vocab=32000,max_pos=1024
if [[ "${SMOKE:-0}" == 1 ]]; then
  shape=dim=64,layers=2,heads=4,kv_heads=4,ffn=128,vocab=512,max_pos=512
  : "${REPEATS:=1}" "${WALKS:=2}"
fi
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
model=$out/grammar-bench-model
[[ -e "$model" ]] || "$tandem" model synth --out "$model" --format hf --shape "$shape" >/dev/null
echo "$(lscpu | sed -n 's/^Model name: *//p')"
"$bench" "$model" "${THREADS:-2}" "${REPEATS:-5}" "${WALKS:-40}" "$toks/llama3" "$toks/qwen3"
