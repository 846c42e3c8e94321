#!/usr/bin/env bash
# The KV-aware router's policies compared on real traces, in the router
# simulator (`tandem router simulate`: the router's own RoutePlanner,
# KvIndex and load model against simulated workers in virtual time), then
# the decision-latency benchmark (64 workers, 1M indexed blocks).
#
# Runs the Mooncake conversation trace (8 workers, KV capacity 1/3 of the
# trace's distinct blocks each) and the Azure 2023 conversation trace (no
# reuse) for SEEDS seeds, writes each run's JSON, text table and SVG under
# OUT_DIR, and prints the per-policy medians over the seeds.
#
#   bench/router_sim.sh TANDEM_BINARY [ROUTE_LATENCY_BENCH]
#
# Environment: TRACES (../shared/data/traces), SEEDS ("0 1 2"), OUT_DIR
# (bench/results/router_sim). SMOKE=1: the 400-line Mooncake slice and the
# Azure excerpt from tests/data, one seed, 4 workers, 10k indexed blocks.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,17p' "$0" >&2; exit 2; fi
tandem=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
latency_bench=${2:-$(dirname "$tandem")/bench/router_sim/route_latency_bench}
if [[ "${SMOKE:-0}" == 1 ]]; then
  mooncake=$root/tests/data/traces/mooncake_conversation_first400.jsonl
  azure=$root/tests/data/traces/azure_llm_2023_conv_excerpt.csv
  seeds=0 workers=4 blocks=10000 decisions=200
else
  traces=${TRACES:-$root/../shared/data/traces}
  mooncake=$traces/mooncake_conversation_trace.jsonl
  azure=$traces/azure_llm_2023_conv.csv
  seeds=${SEEDS:-0 1 2} workers=8 blocks=1000000 decisions=20000
fi
out=${OUT_DIR:-$root/bench/results/router_sim}
mkdir -p "$out"

for trace in mooncake azure; do
  file=$mooncake
  [[ $trace == azure ]] && file=$azure
  for seed in $seeds; do
    echo "== $trace seed $seed"
    "$tandem" router simulate --trace "$trace:$file" --workers "$workers" --kv-capacity-fraction 0.33 \
      --seed "$seed" --json "$out/${trace}_seed$seed.json" --plot "$out/${trace}_seed$seed.svg" \
      2>&1 | tee "$out/${trace}_seed$seed.txt"
  done
  # the median of each number over the seeds.
  python3 - "$trace" "$out" $seeds <<'PY'
import json, statistics, sys
trace, out, seeds = sys.argv[1], sys.argv[2], sys.argv[3:]
runs = [json.load(open(f"{out}/{trace}_seed{s}.json")) for s in seeds]
print(f"{trace}: {runs[0]['requests']} requests, oracle hit rate {runs[0]['oracle_hit_rate']:.3f} "
      f"(median of {len(runs)} seeds)")
fields = ["hit_rate", "ttft_p50_ms", "ttft_p99_ms", "e2e_p99_ms", "imbalance", "rejected"]
print("| policy | " + " | ".join(fields) + " |")
print("|---" * (len(fields) + 1) + "|")
for p in runs[0]["policies"]:
    vals = [statistics.median(r["policies"][p][f] for r in runs) for f in fields]
    print(f"| {p} | " + " | ".join(f"{v:.3f}" if f in ("hit_rate", "imbalance") else f"{v:.0f}"
                                   for f, v in zip(fields, vals)) + " |")
PY
done

if [[ -x "$latency_bench" ]]; then
  echo "== decision latency"
  "$latency_bench" --workers 64 --blocks "$blocks" --decisions "$decisions" | tee "$out/route_latency.txt"
else
  echo "skipped: $latency_bench not built"
fi
