#!/usr/bin/env bash
# Load test of `tandem serve` against llama.cpp's `llama-server` on the same
# GGUF, same workload, same run: C concurrent streaming clients (closed loop)
# for D seconds each, driven by `tandem bench`. Servers run one at a time, in
# turns (tandem, llama, tandem, llama, ...), REPEATS times; the table shows
# medians. Also records tandem's RSS before the load, right after, and after
# a short idle, to show memory returns to its baseline (taken after a 5 s
# warm-up at full concurrency).
#
#   bench/serve_vs_llamacpp.sh LLAMA_BIN_DIR TANDEM_BINARY [MODEL.gguf]
#
# Environment: CONCURRENCY (256), DURATION (60), REPEATS (3), INPUT_LEN (64),
# OUTPUT_LEN (64), THREADS (2), OUT_DIR (a temp dir; the JSON results),
# LLAMA_NP (16): llama-server's parallel slots. Its KV cache is one unified
# array of slots x context cells that every step attends over, so a step
# costs grows with the slot count: at -np 256 on this 2-core machine it
# finished no request within 100 s. Clients beyond the slots wait in its
# queue, as they would in production.
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,14p' "$0" >&2; exit 2; fi
llama_bin=$1 tandem=$2
root=$(cd "$(dirname "$0")/.." && pwd)
model=${3:-$root/models/stories260K/gguf/stories260K.gguf}
conc=${CONCURRENCY:-256} dur=${DURATION:-60} repeats=${REPEATS:-3} llama_np=${LLAMA_NP:-16}
in_len=${INPUT_LEN:-64} out_len=${OUTPUT_LEN:-64} threads=${THREADS:-2}
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
port=18700

rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
wait_health() {
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0
    sleep 0.1
  done
  echo "server on $port did not become healthy" >&2; return 1
}
run_bench() {  # name repeat
  "$tandem" bench --url "http://127.0.0.1:$port" --api completions --workload random \
    --input-len "$in_len" --output-len "$out_len" --concurrency "$conc" --duration "$dur" \
    --out "$out/$1-$2.json" --plot "$out/$1-$2.svg" >"$out/$1-$2.log" 2>&1
}

for r in $(seq 1 "$repeats"); do
  "$tandem" serve --model "$model" --http-port $port --grpc-port -1 --threads "$threads" \
    --max-num-seqs "$conc" --max-pending-requests $((conc * 4)) 2>"$out/tandem-serve-$r.log" &
  pid=$!
  wait_health
  # warm up at full concurrency (this pages in the KV cache pool, which is
  # reserved at start and touched lazily), then take the baseline.
  "$tandem" bench --url "http://127.0.0.1:$port" --workload random --input-len "$in_len" \
    --output-len "$out_len" --concurrency "$conc" --duration 5 --out "$out/warm.json" >/dev/null 2>&1
  sleep 3
  base=$(rss_kb $pid)
  run_bench tandem "$r"
  after=$(rss_kb $pid)
  sleep 3
  idle=$(rss_kb $pid)
  echo "$base $after $idle" >"$out/tandem-rss-$r.txt"
  kill -TERM $pid; wait $pid || true

  "$llama_bin/llama-server" -m "$model" --port $port -t "$threads" -np "$llama_np" -c $((llama_np * (in_len + out_len + 16))) \
    --threads-http $((conc + 8)) --no-webui >"$out/llama-server-$r.log" 2>&1 &
  pid=$!
  wait_health
  run_bench llama "$r"
  kill -TERM $pid; wait $pid || true
done

python3 - "$out" "$repeats" <<'PY'
import json, statistics, sys
out, repeats = sys.argv[1], int(sys.argv[2])
def load(name):
    return [json.load(open(f"{out}/{name}-{r}.json")) for r in range(1, repeats + 1)]
def med(xs): return statistics.median(xs)
rows = []
for name in ("tandem", "llama"):
    rs = load(name)
    errs = [sum(r["errors"].values()) if isinstance(r["errors"], dict) else r["errors"] for r in rs]
    rows.append((name, med([r["request_throughput"] for r in rs]), med([r["output_throughput"] for r in rs]),
                 med([r["ttft_ms"]["p50"] for r in rs]), med([r["ttft_ms"]["p99"] for r in rs]),
                 med([r["itl_ms"]["p50"] for r in rs]), med([r["itl_ms"]["p99"] for r in rs]), max(errs),
                 med([r.get("completed", r.get("num_completed", 0)) for r in rs])))
print("| server | req/s | output tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | errors (max) | completed |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    print("| %s | %.1f | %.0f | %.1f | %.1f | %.2f | %.2f | %d | %s |" % r)
t, l = rows
print(f"\ntandem / llama-server: req/s {t[1]/l[1]:.2f}x, TTFT p50 {t[3]/l[3]:.2f}x (lower is better), p99 {t[4]/l[4]:.2f}x")
for r in range(1, repeats + 1):
    base, after, idle = open(f"{out}/tandem-rss-{r}.txt").read().split()
    print(f"tandem RSS run {r}: before {int(base)/1024:.1f} MiB, right after {int(after)/1024:.1f} MiB, after 3 s idle {int(idle)/1024:.1f} MiB")
PY
echo "results in $out"
