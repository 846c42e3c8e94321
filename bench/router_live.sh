#!/usr/bin/env bash
# The KV-aware router with real processes: a router and 4 decode workers
# (--threads 1 each) on a synthetic model whose prefill costs something (as
# bench/distserve.sh), `tandem bench --workload multiturn` (each turn resends
# the conversation so far, so a router that keeps a conversation on the
# worker holding it prefills only the new turn). RUNS rounds, each running
# `--policy kv` then `--policy round_robin` on fresh workers with the same
# seed (alternating, so a slow spell of the shared box hits both); few
# users, so the workers are not saturated and the TTFT measures the prefill
# the cache saves rather than queueing. Then overload with `--ttft-slo-ms`:
# the router sheds (429 with Retry-After) what no worker can start in time.
# Prints per run and the median: cached-token ratio and TTFT mean/p50/p99 per
# policy, and the shed count.
#
#   bench/router_live.sh TANDEM_BINARY [MODEL]
#
# Environment: RUNS (3), USERS (3), TURNS (8), INPUT_LEN (96), OUTPUT_LEN (8),
# THINK (0.5 s), SLO_MS (300), OUT_DIR, PORT (18950: router PORT, PORT+1 and
# PORT+2).
# SMOKE=1: a tiny model and 2 users x 2 turns, one run (checks the script).
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,21p' "$0" >&2; exit 2; fi
tandem=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ "${SMOKE:-0}" == 1 ]]; then
  defaults=(2 2 64 4 1) shape=dim=64,layers=2,heads=4,kv_heads=4,ffn=128,vocab=512,max_pos=2048
else
  defaults=(3 8 96 8 3) shape=dim=512,layers=8,heads=8,kv_heads=8,ffn=1536,vocab=512,max_pos=2048
fi
users=${USERS:-${defaults[0]}} turns=${TURNS:-${defaults[1]}}
input_len=${INPUT_LEN:-${defaults[2]}} output_len=${OUTPUT_LEN:-${defaults[3]}} slo=${SLO_MS:-300}
runs=${RUNS:-${defaults[4]}} think=${THINK:-0.5}
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
model=${2:-$out/router-live-model}
if [[ ! -e "$model" ]]; then
  "$tandem" model synth --out "$model" --format hf --shape "$shape" \
    --vocab-from "$root/models/stories260K/gguf/stories260K.gguf" >/dev/null
fi
http=${PORT:-18950}
grpc=$((http + 1))
internal=$((http + 2))  # the router's registry (workers register there)
pids=()
cleanup() { kill -TERM "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT

wait_ready() {  # log file
  for _ in $(seq 1 600); do
    grep -q "(OpenAI API) and grpc" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "not ready: $1" >&2; cat "$1" >&2; return 1
}
wait_metric() {  # a line the router's /metrics must show
  for _ in $(seq 1 600); do
    curl -s "http://127.0.0.1:$http/metrics" | grep -qF "$1" && return 0
    sleep 0.1
  done
  echo "the router never showed: $1" >&2; return 1
}
start_cluster() {  # name, router flags...
  local name=$1
  shift
  "$tandem" router --http-port $http --grpc-port $grpc --internal-port $internal "$@" 2>"$out/$name-router.log" &
  pids=($!)
  for i in 1 2 3 4; do
    "$tandem" worker --role decode --model "$model" --max-model-len 2048 --kv-budget 64M --threads 1 \
      --listen 127.0.0.1:0 --router 127.0.0.1:$internal 2>"$out/$name-worker$i.log" &
    pids+=($!)
  done
  wait_ready "$out/$name-router.log"
  wait_metric 'router_workers{role="decode",state="healthy"} 4'
}
stop_cluster() { kill -TERM "${pids[@]}" 2>/dev/null || true; wait "${pids[@]}" 2>/dev/null || true; pids=(); }

for run in $(seq 1 "$runs"); do
  for policy in kv round_robin; do
    name=$policy-$run
    start_cluster "$name" --policy "$policy"
    "$tandem" bench --url "http://127.0.0.1:$http" --api chat --workload multiturn --users "$users" \
      --turns "$turns" --input-len "$input_len" --output-len "$output_len" --think-time "$think" \
      --concurrency "$users" --seed 1 --temperature 0 --out "$out/$name.json" >"$out/$name.log" 2>&1
    curl -s "http://127.0.0.1:$http/metrics" | grep '^tandem:router_route' >"$out/$name-metrics.txt" || true
    stop_cluster
  done
done

# overload: a burst of long prompts far beyond what 4 workers prefill within the SLO.
start_cluster shed --policy kv --ttft-slo-ms "$slo"
"$tandem" bench --url "http://127.0.0.1:$http" --api completions --workload random \
  --input-len $((input_len * 4)) --output-len 4 --rate 200 --num-requests 200 --seed 2 \
  --out "$out/shed.json" >"$out/shed.log" 2>&1 || true
shed=$(curl -s "http://127.0.0.1:$http/metrics" | awk '/^tandem:router_shed_requests_total/ {print $2}')
stop_cluster

python3 - "$out" "${shed:-0}" "$runs" <<'PY'
import json, statistics, sys
out, shed, runs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
def row(name):
    j = json.load(open(f"{out}/{name}.json"))
    s = j.get("summary", j)
    t = s["ttft_ms"]
    return (s.get("cached_token_ratio") or 0.0, t["mean"], t.get("p50", t.get("median", 0.0)), t["p99"], s["completed"])
rows = {p: [row(f"{p}-{r}") for r in range(1, runs + 1)] for p in ("kv", "round_robin")}
print(f"{'run':<4} {'policy':<12} {'cached ratio':>12} {'TTFT mean ms':>13} {'TTFT p50 ms':>12} {'TTFT p99 ms':>12} {'completed':>10}")
for r in range(runs):
    for p in rows:
        c, m, p50, p99, n = rows[p][r]
        print(f"{r + 1:<4} {p:<12} {c:>12.3f} {m:>13.1f} {p50:>12.1f} {p99:>12.1f} {n:>10}")
med = {p: [statistics.median(x[i] for x in rows[p]) for i in range(4)] for p in rows}
for p, (c, m, p50, p99) in med.items():
    print(f"{'med':<4} {p:<12} {c:>12.3f} {m:>13.1f} {p50:>12.1f} {p99:>12.1f}")
sj = json.load(open(f"{out}/shed.json"))
ss = sj.get("summary", sj)
print(f"overload with --ttft-slo-ms: {shed:.0f} shed (429), {ss['completed']} completed, errors {ss.get('errors')}")
wins = sum(rows["kv"][r][1] < rows["round_robin"][r][1] for r in range(runs))
print("kv cached ratio > round_robin (median):", "yes" if med["kv"][0] > med["round_robin"][0] else "NO")
print(f"kv TTFT mean < round_robin: {wins} of {runs} runs; median", "yes" if med["kv"][1] < med["round_robin"][1] else "NO")
print("shed under overload:", "yes" if shed > 0 else "NO")
PY
echo "results in $out"
