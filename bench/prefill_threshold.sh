#!/usr/bin/env bash
# Measures what a remote prefill costs against a local one, per prompt
# length, to choose the router's --max-local-prefill-tokens default.
#
# One prefill worker P (core 0) and one decode worker D (core 1) serve two
# routers at once (both list them with --workers): router "remote" sends
# every prompt to P (--max-local-prefill-tokens 0), router "local" none
# (a huge threshold). For each prompt length, one request at a time
# (max_tokens 1, so TTFT is the prefill plus the hop), N requests through
# each router in turns; the table shows TTFT p50 of both and the overhead of
# going remote. The default threshold is the shortest length whose overhead is
# under OVERHEAD_PCT percent at it and
# every longer length measured.
#
#   bench/prefill_threshold.sh TANDEM_BINARY [MODEL]
#
# MODEL: as bench/distserve.sh (a synthetic dim-512, 8-layer Llama by default).
# Environment: LENGTHS ("16 32 64 128 256 512 1024"), N (20), OVERHEAD_PCT (10), OUT_DIR,
# PORT (18900: routers on PORT+1..PORT+4, workers on PORT+11, PORT+12).
# SMOKE=1: a seconds-long run (a tiny synthetic model, lengths 16 and 64, 3
# requests each) that checks the script end to end.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,20p' "$0" >&2; exit 2; fi
tandem=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ "${SMOKE:-0}" == 1 ]]; then
  def_lengths="16 64" def_n=3 shape=dim=64,layers=2,heads=4,kv_heads=4,ffn=128,vocab=512,max_pos=2048
else
  def_lengths="16 32 64 128 256 512 1024" def_n=20
  shape=dim=512,layers=8,heads=8,kv_heads=8,ffn=1536,vocab=512,max_pos=2048
fi
lengths=${LENGTHS:-$def_lengths} n=${N:-$def_n} overhead=${OVERHEAD_PCT:-10}
base=${PORT:-18900}
remote_http=$((base + 1)) remote_grpc=$((base + 2)) local_http=$((base + 3)) local_grpc=$((base + 4))
prefill=127.0.0.1:$((base + 11)) decode=127.0.0.1:$((base + 12))
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
model=${2:-$out/distserve-model}
if [[ ! -e "$model" ]]; then
  "$tandem" model synth --out "$model" --format hf --shape "$shape" \
    --vocab-from "$root/models/stories260K/gguf/stories260K.gguf" >/dev/null
fi
common=(--model "$model" --max-model-len "${MAX_MODEL_LEN:-2048}" --kv-budget 256M --threads 1)
pids=()
cleanup() { kill -TERM "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
wait_line() {  # log pattern
  for _ in $(seq 1 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "timed out waiting for '$2' in $1" >&2; cat "$1" >&2; return 1
}
wait_metric() {  # port, a line that router's /metrics must show
  for _ in $(seq 1 600); do
    curl -s "http://127.0.0.1:$1/metrics" | grep -qF "$2" && return 0
    sleep 0.1
  done
  echo "the router on $1 never showed: $2" >&2; return 1
}
taskset -c 0 "$tandem" worker --role prefill "${common[@]}" --listen "$prefill" 2>"$out/p.log" &
pids+=($!)
taskset -c 1 "$tandem" worker --role decode "${common[@]}" --listen "$decode" 2>"$out/d.log" &
pids+=($!)
wait_line "$out/p.log" "serving grpc"
wait_line "$out/d.log" "serving grpc"
"$tandem" router --http-port "$remote_http" --grpc-port "$remote_grpc" --workers "$prefill,$decode" \
  --max-local-prefill-tokens 0 2>"$out/router-remote.log" &
pids+=($!)
"$tandem" router --http-port "$local_http" --grpc-port "$local_grpc" --workers "$prefill,$decode" \
  --max-local-prefill-tokens 1000000 2>"$out/router-local.log" &
pids+=($!)
wait_line "$out/router-remote.log" "(OpenAI API) and grpc"
wait_line "$out/router-local.log" "(OpenAI API) and grpc"
# both routers see P and D healthy.
for port in "$remote_http" "$local_http"; do
  wait_metric "$port" 'router_workers{role="prefill",state="healthy"} 1'
  wait_metric "$port" 'router_workers{role="decode",state="healthy"} 1'
done

printf "%8s %14s %14s %10s\n" "prompt" "local p50 ms" "remote p50 ms" "overhead" | tee "$out/table.txt"
for len in $lengths; do
  for mode in local remote; do
    # different prompts per mode: the decode worker's prefix cache must not
    # serve the second mode's prompts.
    port=$local_http seed=$len
    [[ $mode == remote ]] && port=$remote_http seed=$((len + 100000))
    "$tandem" bench --url "http://127.0.0.1:$port" --api completions --workload random \
      --input-len "$len" --output-len 1 --concurrency 1 --num-requests "$n" --seed "$seed" \
      --out "$out/$mode-$len.json" >"$out/$mode-$len.log" 2>&1
  done
  python3 - "$out" "$len" <<'EOF' | tee -a "$out/table.txt"
import json, sys
out, n = sys.argv[1], sys.argv[2]
runs = {m: json.load(open(f"{out}/{m}-{n}.json")) for m in ("local", "remote")}
for m, j in runs.items():
    if not j["completed"]:
        sys.exit(f"{m} prompts of {n} tokens: no request completed")
l, r = runs["local"]["ttft_ms"]["p50"], runs["remote"]["ttft_ms"]["p50"]
print(f"{n:>8} {l:>14.2f} {r:>14.2f} {100 * (r - l) / l:>9.1f}%")
EOF
done
# the default: the shortest length from which on every measured length pays
# less than OVERHEAD_PCT for going remote.
awk -v limit="$overhead" 'NR > 1 { sub("%", "", $4); len[NR] = $1; ok[NR] = ($4 + 0 < limit); n = NR }
  END { pick = ""; for (i = n; i > 1 && ok[i]; i--) pick = len[i]
        if (pick == "") print "no length had remote overhead under " limit "%"
        else print "shortest length from which remote overhead stays under " limit "%: " pick }' "$out/table.txt"
grep -h router_prefills_total <(curl -s "http://127.0.0.1:$remote_http/metrics") \
  <(curl -s "http://127.0.0.1:$local_http/metrics") || true
echo "results in $out"
