#!/usr/bin/env bash
# The autoscaling planner's policies compared in the planner simulator
# (`tandem planner simulate`: prefill and decode workers with the shipped
# MI300X-class profile behind the router's own routing code, the planner in
# the loop, virtual time) on the Azure 2023 conversation trace and the
# Mooncake conversation trace, each brought to cluster scale by overlaying
# REPLICAS copies (arrivals jittered by up to a minute, no shared prefixes).
# KV blocks of 512 tokens (the Mooncake trace's own granularity) keep the
# simulation fast. Writes each run's JSON, text table and SVG under OUT_DIR and prints the
# table of bench/RESULTS.md ("Autoscaling planner").
#
#   bench/planner_sim.sh TANDEM_BINARY
#
# Environment: TRACES (../shared/data/traces), OUT_DIR
# (bench/results/planner_sim), AZURE_REPLICAS (40), MOONCAKE_REPLICAS (30).
# SMOKE=1: the 400-line Mooncake slice and the Azure excerpt from tests/data,
# 2 replicas.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,18p' "$0" >&2; exit 2; fi
tandem=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ "${SMOKE:-0}" == 1 ]]; then
  mooncake=$root/tests/data/traces/mooncake_conversation_first400.jsonl
  azure=$root/tests/data/traces/azure_llm_2023_conv_excerpt.csv
  azure_replicas=2 mooncake_replicas=2
else
  traces=${TRACES:-$root/../shared/data/traces}
  mooncake=$traces/mooncake_conversation_trace.jsonl
  azure=$traces/azure_llm_2023_conv.csv
  azure_replicas=${AZURE_REPLICAS:-40} mooncake_replicas=${MOONCAKE_REPLICAS:-30}
fi
out=${OUT_DIR:-$root/bench/results/planner_sim}
mkdir -p "$out"

# SLOs per trace: Azure's chat prompts (mean 1.2k tokens) against 500 ms /
# 50 ms; Mooncake's long prompts (mean 12k, p99 85k tokens: 5.5 s of prefill
# alone at p99 on this profile) against MOONCAKE_TTFT_SLO_MS / 50 ms.
run() {  # name, trace spec, replicas, ttft slo
  echo "== $1 ($3 replicas, TTFT SLO $4 ms, ITL SLO 50 ms)"
  "$tandem" planner simulate --trace "$2" --replicas "$3" --block-size 512 --policies sla,load,static \
    --cold-start 30s --interval 10s --ttft-slo-ms "$4" --itl-slo-ms 50 \
    --json "$out/$1.json" --plot "$out/$1.svg" 2>&1 | tee "$out/$1.txt"
}
run azure "azure:$azure" "$azure_replicas" 500
run mooncake "mooncake:$mooncake" "$mooncake_replicas" "${MOONCAKE_TTFT_SLO_MS:-8000}"

python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
print("| trace | policy | TTFT attainment | ITL attainment | SLO misses | GPU-hours | vs static | scale events | max P | max D |")
print("|---|---|---|---|---|---|---|---|---|---|")
for trace in ("azure", "mooncake"):
    r = json.load(open(f"{out}/{trace}.json"))
    static = r["policies"]["static"]["gpu_hours"]
    for name, p in r["policies"].items():
        print(f"| {trace} | {name} | {100 * p['ttft_attainment']:.2f}% | {100 * p['itl_attainment']:.2f}% | "
              f"{p['slo_misses']} | {p['gpu_hours']:.1f} | {100 * (p['gpu_hours'] / static - 1):+.0f}% | "
              f"{p['scale_events']} | {p['max_prefill']} | {p['max_decode']} |")
PY
