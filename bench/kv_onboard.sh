#!/usr/bin/env bash
# Onboarding a request's prefix from G2 (host memory) and from G3 (disk,
# O_DIRECT) against recomputing it: time to first token, median of REPEATS,
# for 128/512/2048-token prefixes of a stories110M-shape synthetic Llama
# (dim 768, 12 layers, 12 heads, ffn 2048; vocab 512 from stories260K).
#
#   bench/kv_onboard.sh KV_ONBOARD_BENCH TANDEM_BINARY
#
# Environment: DISK_DIR (G3's directory; default a fresh one under
# ./kv-onboard-g3 of the current directory: keep it on the real disk, not
# tmpfs), PREFIXES (128,512,2048), REPEATS (5), THREADS (2), OUT_DIR.
# SMOKE=1: a tiny model, 32/64-token prefixes, 1 repeat: checks the script.
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,13p' "$0" >&2; exit 2; fi
bench=$(realpath "$1") tandem=$(realpath "$2")
root=$(cd "$(dirname "$0")/.." && pwd)
shape=dim=768,layers=12,heads=12,kv_heads=12,ffn=2048,vocab=512,max_pos=4096
if [[ "${SMOKE:-0}" == 1 ]]; then
  shape=dim=64,layers=2,heads=4,kv_heads=4,ffn=128,vocab=512,max_pos=512
  : "${PREFIXES:=32,64}" "${REPEATS:=1}"
fi
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
model=$out/kv-onboard-model
[[ -e "$model" ]] || "$tandem" model synth --out "$model" --format hf --shape "$shape" \
  --vocab-from "$root/models/stories260K/gguf/stories260K.gguf" >/dev/null
disk=${DISK_DIR:-$PWD/kv-onboard-g3-$$}
echo "$(lscpu | sed -n 's/^Model name: *//p'); G3 in $disk ($(df -T "$(dirname "$disk")" | awk 'NR==2 {print $2}'))"
"$bench" "$model" "$disk" "${PREFIXES:-128,512,2048}" "${REPEATS:-5}" "${THREADS:-2}"
