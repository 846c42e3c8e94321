#!/usr/bin/env bash
# The DistServe effect on this machine: decode inter-token latency when long
# prompts arrive among short chat requests, aggregated vs disaggregated, on
# the same two cores.
#
#   aggregated:     tandem serve --decode-workers 0, 2 engine threads, cores 0-1
#   disaggregated:  tandem router + a prefill worker (1 thread, core 0) + a
#                   decode worker (1 thread, core 1); long prompts (over
#                   --max-local-prefill-tokens) are prefilled on P
#
# Both get the same open-loop workload from `tandem bench` (Poisson arrivals,
# a CSV of prompt,output lengths cycled: LONG once, then SHORT x SHORT_PER_LONG),
# in turns (agg, disagg, agg, ...), REPEATS times; the table shows medians.
# The router and the load generator are not pinned (they share both cores in
# both setups).
#
#   bench/distserve.sh TANDEM_BINARY [MODEL]
#
# MODEL defaults to a synthetic Llama (dim 512, 8 layers, max_pos 2048, the
# stories260K tokenizer) written on first use into $OUT_DIR: stories260K is so
# small that a prefill costs almost nothing. Environment: RATE (req/s, 4),
# DURATION (s, 40), REPEATS (3), LONG (input,output: 1536,4), SHORT (48,96),
# SHORT_PER_LONG (3), THRESHOLD (--max-local-prefill-tokens, 256), OUT_DIR,
# PORT (18800; gRPC on PORT+1, the router's internal port on PORT+2).
# SMOKE=1: a seconds-long run (a tiny synthetic model, 3 s, 1 repeat, short
# prompts) that checks the script end to end.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,25p' "$0" >&2; exit 2; fi
tandem=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ "${SMOKE:-0}" == 1 ]]; then
  defaults=(3 1 200,2 16,8 32) shape=dim=64,layers=2,heads=4,kv_heads=4,ffn=128,vocab=512,max_pos=2048
else
  defaults=(40 3 1536,4 48,96 256) shape=dim=512,layers=8,heads=8,kv_heads=8,ffn=1536,vocab=512,max_pos=2048
fi
rate=${RATE:-4} dur=${DURATION:-${defaults[0]}} repeats=${REPEATS:-${defaults[1]}}
long=${LONG:-${defaults[2]}} short=${SHORT:-${defaults[3]}} per_long=${SHORT_PER_LONG:-3}
threshold=${THRESHOLD:-${defaults[4]}}
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
model=${2:-$out/distserve-model}
if [[ ! -e "$model" ]]; then
  "$tandem" model synth --out "$model" --format hf --shape "$shape" \
    --vocab-from "$root/models/stories260K/gguf/stories260K.gguf" >/dev/null
fi
{ echo "$long"; for _ in $(seq 1 "$per_long"); do echo "$short"; done; } >"$out/lengths.csv"
http=${PORT:-18800}
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
run_bench() {  # name
  "$tandem" bench --url "http://127.0.0.1:$http" --api completions --workload random \
    --lengths-file "$out/lengths.csv" --rate "$rate" --duration "$dur" --seed 1 \
    --out "$out/$1.json" >"$out/$1.log" 2>&1
}
wait_metric() {  # a line the router's /metrics must show
  for _ in $(seq 1 600); do
    curl -s "http://127.0.0.1:$http/metrics" | grep -qF "$1" && return 0
    sleep 0.1
  done
  echo "the router never showed: $1" >&2; return 1
}
stop_all() { kill -TERM "$@" 2>/dev/null || true; wait "$@" 2>/dev/null || true; }
common=(--model "$model" --max-model-len 2048 --kv-budget 256M)

for r in $(seq 1 "$repeats"); do
  taskset -c 0,1 "$tandem" serve "${common[@]}" --decode-workers 0 --prefill-workers 0 \
    --threads 2 --http-port $http --grpc-port $grpc 2>"$out/agg-serve-$r.log" &
  pid=$!
  pids=($pid)
  wait_ready "$out/agg-serve-$r.log"
  run_bench "agg-$r"
  stop_all $pid

  "$tandem" router --http-port $http --grpc-port $grpc --internal-port $internal --max-local-prefill-tokens "$threshold" \
    2>"$out/disagg-router-$r.log" &
  router=$!
  taskset -c 0 "$tandem" worker --role prefill "${common[@]}" --threads 1 \
    --listen 127.0.0.1:0 --router 127.0.0.1:$internal 2>"$out/disagg-p-$r.log" &
  p=$!
  taskset -c 1 "$tandem" worker --role decode "${common[@]}" --threads 1 \
    --listen 127.0.0.1:0 --router 127.0.0.1:$internal 2>"$out/disagg-d-$r.log" &
  d=$!
  pids=($router $p $d)
  wait_ready "$out/disagg-router-$r.log"
  # both workers registered: wait until the router routes long prompts to P.
  wait_metric 'router_workers{role="prefill",state="healthy"} 1'
  wait_metric 'router_workers{role="decode",state="healthy"} 1'
  run_bench "disagg-$r"
  curl -s "http://127.0.0.1:$http/metrics" | grep router_prefills_total >"$out/disagg-prefills-$r.txt" || true
  stop_all $router $p $d
done

python3 - "$out" "$repeats" <<'EOF'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
def med(name, path):
    vals = []
    for r in range(1, repeats + 1):
        j = json.load(open(f"{out}/{name}-{r}.json"))
        s = j.get("summary", j)
        for k in path:
            s = s[k]
        vals.append(s)
    return statistics.median(vals), vals
rows = [("ITL p99 (ms)", ["itl_ms", "p99"]), ("ITL p50 (ms)", ["itl_ms", "p50"]),
        ("TPOT p50 (ms)", ["tpot_ms", "p50"]), ("TTFT p50 (ms)", ["ttft_ms", "p50"]),
        ("TTFT p99 (ms)", ["ttft_ms", "p99"]), ("completed", ["completed"])]
print(f"{'metric':<16} {'aggregated':>12} {'disaggregated':>14}   (median of {repeats}; all runs)")
for label, path in rows:
    try:
        a, av = med("agg", path); d, dv = med("disagg", path)
        print(f"{label:<16} {a:>12.1f} {d:>14.1f}   agg {av} disagg {dv}")
    except (KeyError, FileNotFoundError) as e:
        print(f"{label:<16} missing ({e})")
# a run that completed nothing measured nothing: fail.
for name in ("agg", "disagg"):
    if not med(name, ["completed"])[0]:
        sys.exit(f"{name}: no request completed")
EOF
echo "results in $out"
