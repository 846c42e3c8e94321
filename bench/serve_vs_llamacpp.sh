#!/usr/bin/env bash
# Load test of `tandem serve` against llama.cpp's `llama-server` on the same
# GGUF, same workload, same run: C concurrent streaming clients (closed loop)
# for D seconds each, driven by `tandem bench`. Servers run one at a time, in
# turns (tandem, llama, tandem, llama, ...), REPEATS times; the table shows
# medians. Also records tandem's memory before the load, right after, and
# after a short idle, to show it returns to its baseline (taken after a 5 s
# warm-up at full concurrency). Memory is the PSS summed over the whole
# process tree of `tandem serve` (supervisor, router, workers): the decode
# workers' KV cache is shared memory, which RSS would count once per process
# mapping it.
#
#   bench/serve_vs_llamacpp.sh LLAMA_BIN_DIR TANDEM_BINARY [MODEL.gguf]
#
# Environment: CONCURRENCY (256), DURATION (60), REPEATS (3), INPUT_LEN (64),
# OUTPUT_LEN (64), THREADS (2), OUT_DIR (a temp dir; the JSON results),
# LLAMA_NP (16): llama-server's parallel slots. Its KV cache is one unified
# array of slots x context cells that every step attends over, so a step
# costs grows with the slot count: at -np 256 on this 2-core machine it
# finished no request within 100 s. Clients beyond the slots wait in its
# queue, as they would in production. PORT (18700; the gRPC API on PORT+1).
# SMOKE=1: a seconds-long run (4 clients, 2 s, 1 repeat) that checks the
# script end to end. Without LLAMA_BIN_DIR/llama-server, llama.cpp's turns are
# skipped (said so) and tandem's still run.
set -euo pipefail
if [[ $# -lt 2 ]]; then sed -n '2,26p' "$0" >&2; exit 2; fi
llama_bin=$1 tandem=$2
root=$(cd "$(dirname "$0")/.." && pwd)
model=${3:-$root/models/stories260K/gguf/stories260K.gguf}
if [[ "${SMOKE:-0}" == 1 ]]; then
  def_conc=4 def_dur=2 def_repeats=1 def_len=16 warm_s=1 idle_s=0.5
else
  def_conc=256 def_dur=60 def_repeats=3 def_len=64 warm_s=5 idle_s=3
fi
conc=${CONCURRENCY:-$def_conc} dur=${DURATION:-$def_dur} repeats=${REPEATS:-$def_repeats}
llama_np=${LLAMA_NP:-16}
in_len=${INPUT_LEN:-$def_len} out_len=${OUTPUT_LEN:-$def_len} threads=${THREADS:-2}
out=${OUT_DIR:-$(mktemp -d)}
mkdir -p "$out"
port=${PORT:-18700}
have_llama=1
if [[ ! -x "$llama_bin/llama-server" ]]; then
  have_llama=0
  echo "skipped: llama.cpp not found ($llama_bin/llama-server); running tandem's side only"
fi

pid=
cleanup() { [[ -n "$pid" ]] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; return 0; }
trap cleanup EXIT

# the process tree under $1, $1 included.
tree_pids() {
  local p
  echo "$1"
  for p in $(pgrep -P "$1"); do tree_pids "$p"; done
}
# KiB: the proportional set size (shared pages split among the processes
# mapping them) summed over the tree, so the workers' shared KV cache counts once.
tree_pss_kb() {
  local total=0 p kb
  for p in $(tree_pids "$1"); do
    kb=$(awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null || true)
    total=$((total + ${kb:-0}))
  done
  echo "$total"
}
wait_health() {  # log; the router answers /health 200 once a decode worker is ready
  for _ in $(seq 1 1200); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "server on $port did not become healthy; its log ($1):" >&2
  tail -n 20 "$1" >&2
  return 1
}
run_bench() {  # name repeat
  "$tandem" bench --url "http://127.0.0.1:$port" --api completions --workload random \
    --input-len "$in_len" --output-len "$out_len" --concurrency "$conc" --duration "$dur" \
    --out "$out/$1-$2.json" --plot "$out/$1-$2.svg" >"$out/$1-$2.log" 2>&1
}

for r in $(seq 1 "$repeats"); do
  "$tandem" serve --model "$model" --http-port "$port" --grpc-port $((port + 1)) --threads "$threads" \
    --max-num-seqs "$conc" --max-pending-requests $((conc * 4)) 2>"$out/tandem-serve-$r.log" &
  pid=$!
  wait_health "$out/tandem-serve-$r.log"
  # warm up at full concurrency (this pages in the KV cache pool, which is
  # reserved at start and touched lazily), then take the baseline.
  "$tandem" bench --url "http://127.0.0.1:$port" --workload random --input-len "$in_len" \
    --output-len "$out_len" --concurrency "$conc" --duration "$warm_s" --out "$out/warm.json" >/dev/null 2>&1
  sleep "$idle_s"
  base=$(tree_pss_kb "$pid")
  run_bench tandem "$r"
  after=$(tree_pss_kb "$pid")
  sleep "$idle_s"
  idle=$(tree_pss_kb "$pid")
  echo "$base $after $idle $(tree_pids "$pid" | wc -l)" >"$out/tandem-rss-$r.txt"
  kill -TERM "$pid"; wait "$pid" || true
  pid=

  if ((have_llama)); then
    "$llama_bin/llama-server" -m "$model" --port "$port" -t "$threads" -np "$llama_np" -c $((llama_np * (in_len + out_len + 16))) \
      --threads-http $((conc + 8)) --no-webui >"$out/llama-server-$r.log" 2>&1 &
    pid=$!
    wait_health "$out/llama-server-$r.log"
    run_bench llama "$r"
    kill -TERM "$pid"; wait "$pid" || true
    pid=
  fi
done

python3 - "$out" "$repeats" "$have_llama" <<'PY'
import json, statistics, sys
out, repeats, have_llama = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
def load(name):
    return [json.load(open(f"{out}/{name}-{r}.json")) for r in range(1, repeats + 1)]
def med(xs): return statistics.median(xs)
rows = []
for name in ("tandem", "llama") if have_llama else ("tandem",):
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
if not rows[0][8]:
    sys.exit("tandem completed no request")
if have_llama:
    t, l = rows
    print(f"\ntandem / llama-server: req/s {t[1]/l[1]:.2f}x, TTFT p50 {t[3]/l[3]:.2f}x (lower is better), p99 {t[4]/l[4]:.2f}x")
for r in range(1, repeats + 1):
    base, after, idle, procs = open(f"{out}/tandem-rss-{r}.txt").read().split()
    print(f"tandem serve memory (PSS of its {procs} processes) run {r}: before {int(base)/1024:.1f} MiB, "
          f"right after {int(after)/1024:.1f} MiB, after idle {int(idle)/1024:.1f} MiB")
    if not int(base):
        sys.exit("no memory measured: the serve process tree was not found")
PY
echo "results in $out"
