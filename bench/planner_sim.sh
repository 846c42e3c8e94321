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
# (bench/results/planner_sim), AZURE_REPLICAS (10), MOONCAKE_REPLICAS (10),
# SEARCH (1: also search the smallest static counts that meet both SLOs).
# `static` runs with the sla sizing model at the trace's busiest interval;
# the search then bisects prefill (decode generous) for TTFT >= 99%, then
# decode at that prefill for ITL >= 99%, static runs only. Mooncake runs
# twice: with the router's learned per-worker prefill rates (its default)
# and without (--router-learns-rates false), to show what they cost.
# SMOKE=1: the 400-line Mooncake slice and the Azure excerpt from tests/data,
# 2 replicas, no search.
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,24p' "$0" >&2; exit 2; fi
tandem=$(realpath "$1")
root=$(cd "$(dirname "$0")/.." && pwd)
if [[ "${SMOKE:-0}" == 1 ]]; then
  mooncake=$root/tests/data/traces/mooncake_conversation_first400.jsonl
  azure=$root/tests/data/traces/azure_llm_2023_conv_excerpt.csv
  azure_replicas=2 mooncake_replicas=2 search=0
else
  traces=${TRACES:-$root/../shared/data/traces}
  mooncake=$traces/mooncake_conversation_trace.jsonl
  azure=$traces/azure_llm_2023_conv.csv
  azure_replicas=${AZURE_REPLICAS:-10} mooncake_replicas=${MOONCAKE_REPLICAS:-10} search=${SEARCH:-1}
fi
out=${OUT_DIR:-$root/bench/results/planner_sim}
mkdir -p "$out"

# SLOs per trace: Azure's chat prompts (mean 1.2k tokens) against 500 ms /
# 50 ms; Mooncake's long prompts (mean 12k, p99 85k tokens: 5.5 s of prefill
# alone at p99 on this profile) against MOONCAKE_TTFT_SLO_MS / 50 ms.
run() {  # name, trace spec, replicas, ttft slo, extra flags...
  local name=$1 spec=$2 replicas=$3 slo=$4
  shift 4
  echo "== $name ($replicas replicas, TTFT SLO $slo ms, ITL SLO 50 ms) $*"
  "$tandem" planner simulate --trace "$spec" --replicas "$replicas" --block-size 512 --policies sla,load,static \
    --cold-start 30s --interval 10s --ttft-slo-ms "$slo" --itl-slo-ms 50 "$@" \
    --json "$out/$name.json" --plot "$out/$name.svg" 2>&1 | tee "$out/$name.txt"
}
# static only at P,D: prints "TTFT ITL GPU-hours".
static_at() {  # trace spec, replicas, ttft slo, P, D, extra flags...
  local spec=$1 replicas=$2 slo=$3 p=$4 d=$5
  shift 5
  "$tandem" planner simulate --trace "$spec" --replicas "$replicas" --block-size 512 --policies static --foresight false \
    --static-counts "$p,$d" --cold-start 30s --interval 10s --ttft-slo-ms "$slo" --itl-slo-ms 50 "$@" \
    --json "$out/search.tmp.json" >/dev/null 2>&1
  python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["policies"]["static"]; print(p["ttft_attainment"], p["itl_attainment"], p["gpu_hours"])' "$out/search.tmp.json"
}
# the smallest static meeting both SLOs (>= 99%): bisect P in [1, 3 x the
# model's] at 3 x the model's D, then D in [1, 3 x the model's] at that P.
search() {  # name, trace spec, replicas, ttft slo, extra flags...
  local name=$1 spec=$2 replicas=$3 slo=$4
  shift 4
  read -r p0 d0 < <(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["static_model_counts"]; print(c["prefill"], c["decode"])' "$out/$name.json")
  local lo=1 hi=$((3 * p0)) dmax=$((3 * d0)) mid att
  read -r att _ _ < <(static_at "$spec" "$replicas" "$slo" "$hi" "$dmax" "$@")
  if python3 -c "import sys; sys.exit(0 if $att >= 0.99 else 1)"; then
    while ((lo < hi)); do
      mid=$(((lo + hi) / 2))
      read -r att _ _ < <(static_at "$spec" "$replicas" "$slo" "$mid" "$dmax" "$@")
      if python3 -c "import sys; sys.exit(0 if $att >= 0.99 else 1)"; then hi=$mid; else lo=$((mid + 1)); fi
    done
    local p=$lo dlo=1 dhi=$dmax itl
    while ((dlo < dhi)); do
      mid=$(((dlo + dhi) / 2))
      read -r _ itl _ < <(static_at "$spec" "$replicas" "$slo" "$p" "$mid" "$@")
      if python3 -c "import sys; sys.exit(0 if $itl >= 0.99 else 1)"; then dhi=$mid; else dlo=$((mid + 1)); fi
    done
    read -r att itl gpuh < <(static_at "$spec" "$replicas" "$slo" "$p" "$dlo" "$@")
    echo "{\"prefill\": $p, \"decode\": $dlo, \"ttft_attainment\": $att, \"itl_attainment\": $itl, \"gpu_hours\": $gpuh}" > "$out/$name.search.json"
  else
    echo "{\"prefill\": null, \"decode\": null, \"note\": \"static at $hi P + $dmax D reaches TTFT $att < 0.99\"}" > "$out/$name.search.json"
  fi
  rm -f "$out/search.tmp.json"
  echo "smallest static meeting both SLOs ($name): $(cat "$out/$name.search.json")"
}
mooncake_slo=${MOONCAKE_TTFT_SLO_MS:-8000}
run azure "azure:$azure" "$azure_replicas" 500
run mooncake "mooncake:$mooncake" "$mooncake_replicas" "$mooncake_slo"
run mooncake_fixed_rates "mooncake:$mooncake" "$mooncake_replicas" "$mooncake_slo" --router-learns-rates false
if [[ "$search" == 1 ]]; then
  search azure "azure:$azure" "$azure_replicas" 500
  search mooncake "mooncake:$mooncake" "$mooncake_replicas" "$mooncake_slo"
  search mooncake_fixed_rates "mooncake:$mooncake" "$mooncake_replicas" "$mooncake_slo" --router-learns-rates false
fi

python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
print("| trace | policy | TTFT attainment | ITL attainment | SLO misses | GPU-hours | vs static (model peak) | vs smallest static meeting SLOs | scale events | max P | max D |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for trace in ("azure", "mooncake", "mooncake_fixed_rates"):
    r = json.load(open(f"{out}/{trace}.json"))
    static = r["policies"]["static"]["gpu_hours"]
    s = json.load(open(f"{out}/{trace}.search.json")) if os.path.exists(f"{out}/{trace}.search.json") else {}
    for name, p in r["policies"].items():
        vs = (f"{100 * (p['gpu_hours'] / s['gpu_hours'] - 1):+.0f}%" if s.get("gpu_hours")
              else "none meets them" if s else "not searched")
        print(f"| {trace} | {name} | {100 * p['ttft_attainment']:.2f}% | {100 * p['itl_attainment']:.2f}% | "
              f"{p['slo_misses']} | {p['gpu_hours']:.1f} | {100 * (p['gpu_hours'] / static - 1):+.0f}% | {vs} | "
              f"{p['scale_events']} | {p['max_prefill']} | {p['max_decode']} |")
    if s.get("gpu_hours"):
        print(f"| {trace} | smallest static | {100 * s['ttft_attainment']:.2f}% | {100 * s['itl_attainment']:.2f}% | | "
              f"{s['gpu_hours']:.1f} | {100 * (s['gpu_hours'] / static - 1):+.0f}% | +0% | 0 | {s['prefill']} | {s['decode']} |")
PY
