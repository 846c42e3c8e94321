#!/usr/bin/env bash
# What G2 (--kv-host-bytes) buys a multi-turn chat when G1 is small: the same
# `tandem bench --workload multiturn` run against `tandem serve` (router and
# engine in one process) with the tiers off, with G2 on, and with a small G2
# over G3 (a disk file in OUT_DIR, --kv-disk-min-hits 1), REPEATS times in
# turns; prints mean TTFT, the cached-token ratio and the prompt tokens the
# engine recomputed (total input tokens minus cached), and their medians.
#
#   bench/kv_tiers.sh TANDEM_BINARY [MODEL]
#
# MODEL: a synthetic dim-512, 8-layer Llama by default (stories260K's
# prefill is too cheap to show). Environment: KV_BUDGET (16M: G1 holds
# ~512 tokens of this model), HOST_BYTES (1G), G3_HOST_BYTES (the small G2
# above G3: 32M), DISK_BYTES (2G), USERS (8), TURNS (4),
# INPUT_LEN (96), OUTPUT_LEN (16), THINK (0.2), REPEATS (3), THREADS (2),
# PORT (18950), OUT_DIR. SMOKE=1: a seconds-long run (a tiny synthetic
# model, 2 users of 2 turns, one repeat) that checks the script end to end.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,17p' "$0" >&2; exit 2; fi
shape=dim=512,layers=8,heads=8,kv_heads=8,ffn=1536,vocab=512,max_pos=2048
if [[ "${SMOKE:-0}" == 1 ]]; then
  shape=dim=64,layers=2,heads=4,kv_heads=4,ffn=128,vocab=512,max_pos=2048
  : "${USERS:=2}" "${TURNS:=2}" "${INPUT_LEN:=16}" "${OUTPUT_LEN:=4}" "${THINK:=0}" "${REPEATS:=1}" "${KV_BUDGET:=64K}" "${HOST_BYTES:=4M}"
  : "${G3_HOST_BYTES:=64K}" "${DISK_BYTES:=16M}"
fi
tandem=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
model=${2:-$out/kv-tiers-model}
if [[ ! -e "$model" ]]; then
  "$tandem" model synth --out "$model" --format hf \
    --shape "$shape" \
    --vocab-from "$root/models/stories260K/gguf/stories260K.gguf" >/dev/null
fi
port=${PORT:-18950}
pid=
cleanup() { [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

run() {  # label host_bytes repeat [more serve flags]
  "$tandem" serve --model "$model" --decode-workers 0 --prefill-workers 0 \
    --http-port "$port" --grpc-port -1 --threads "${THREADS:-2}" --max-model-len 2048 \
    --kv-budget "${KV_BUDGET:-16M}" --kv-host-bytes "$2" "${@:4}" 2>"$out/serve-$1-$3.log" &
  pid=$!
  for _ in $(seq 1 600); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done
  "$tandem" bench --url "http://127.0.0.1:$port" --api chat --workload multiturn \
    --users "${USERS:-8}" --turns "${TURNS:-4}" --input-len "${INPUT_LEN:-96}" \
    --output-len "${OUTPUT_LEN:-16}" --think-time "${THINK:-0.2}" --concurrency "${USERS:-8}" \
    --out "$out/$1-$3.json" >"$out/bench-$1-$3.txt" 2>&1
  kill -TERM "$pid"; wait "$pid" || true; pid=
}
for r in $(seq 1 "${REPEATS:-3}"); do
  run off 0 "$r"
  run g2 "${HOST_BYTES:-1G}" "$r"
  rm -rf "$out/g3-$r"
  run g2s+g3 "${G3_HOST_BYTES:-32M}" "$r" --kv-disk-path "$out/g3-$r" --kv-disk-bytes "${DISK_BYTES:-2G}" \
    --kv-disk-min-hits 1
done
python3 - "$out" "${REPEATS:-3}" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
rows = {}
for label in ("off", "g2", "g2s+g3"):
    for r in range(1, n + 1):
        j = json.load(open(f"{out}/{label}-{r}.json"))
        j = j["runs"][0] if "runs" in j else j
        total = j["total_input_tokens"]; ratio = j["cached_token_ratio"] or 0.0
        rows.setdefault(label, []).append((j["ttft_ms"]["mean"], ratio, round(total * (1 - ratio)), j["completed"], j["failed"]))
print("| tiers | run | TTFT mean ms | cached ratio | recomputed prompt tokens | completed | failed |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for label, rs in rows.items():
    for i, (t, c, rec, ok, bad) in enumerate(rs, 1):
        print(f"| {label} | {i} | {t:.1f} | {c:.3f} | {rec} | {ok} | {bad} |")
med = {k: (statistics.median(x[0] for x in v), statistics.median(x[2] for x in v)) for k, v in rows.items()}
for k, (t, rec) in med.items():
    print(f"median {k}: TTFT mean {t:.1f} ms, recomputed prompt tokens {rec}")
for k in ("g2", "g2s+g3"):
    print(f"{'G2' if k == 'g2' else 'small G2 + G3'} / off: TTFT {med[k][0] / med['off'][0]:.2f}x, "
          f"recomputed tokens {med[k][1] / max(med['off'][1], 1):.2f}x")
PY
