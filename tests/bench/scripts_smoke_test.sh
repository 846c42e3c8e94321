#!/usr/bin/env bash
# Runs every bench/*.sh and bench/*/*.sh in its SMOKE=1 mode (seconds-long, tandem's side end
# to end; llama.cpp's turns skipped: no llama.cpp is given) against the built
# binaries, so the scripts cannot rot unnoticed. Fails when a script fails or
# a bench script is not covered here. Downloads nothing.
#
#   tests/bench/scripts_smoke_test.sh TANDEM_BINARY MODEL_RUNNER_BENCH KV_DISK_BENCH KV_ONBOARD_BENCH \
#     GRAMMAR_MASK_BENCH TOKENIZERS_DIR
set -euo pipefail
if [[ $# -ne 6 ]]; then sed -n '2,8p' "$0" >&2; exit 2; fi
tandem=$(realpath "$1") runner_bench=$(realpath "$2") kv_disk_bench=$(realpath "$3") kv_onboard_bench=$(realpath "$4")
grammar_bench=$(realpath "$5") tokenizers=$(realpath "$6")
root=$(cd "$(dirname "$0")/../.." && pwd)
model=$root/models/stories260K/gguf/stories260K.gguf
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
no_llama=$work/no-llama  # an empty directory: llama.cpp is not built here
mkdir -p "$no_llama"

covered=(engine_vs_llamacpp.sh serve_vs_llamacpp.sh distserve.sh prefill_threshold.sh kv_disk_vs_fio.sh kv_tiers.sh kv_onboard.sh router_sim.sh router_live.sh grammar_mask.sh planner_sim.sh planner_sim_cv.sh soak.sh faults.sh bad_input.sh big_body_latency.sh
         gpu/run_on_device.sh gpu/prepare_carry.sh gpu/pack_tandem.sh
         gpu/build_check.sh  # built and run by the gpucheck_build_* ctests (gpu_compile)
         lib/e2e_setup.sh)   # sourced by soak.sh, faults.sh and bad_input.sh, run with them
for script in "$root"/bench/*.sh "$root"/bench/*/*.sh; do
  name=${script#"$root"/bench/}
  [[ " ${covered[*]} " == *" $name "* ]] || { echo "FAIL: bench/$name has no smoke run here" >&2; exit 1; }
done

failed=()
run() {  # name, expected line ("" for none), command...
  local name=$1 expect=$2 start=$SECONDS rc=0
  shift 2
  echo "== $name"
  SMOKE=1 OUT_DIR="$work/$name" "$@" >"$work/$name.log" 2>&1 || rc=$?
  if ((rc == 0)) && [[ -n "$expect" ]] && ! grep -qF "$expect" "$work/$name.log"; then
    echo "(no '$expect' line)" >>"$work/$name.log"
    rc=1
  fi
  if ((rc != 0)); then
    failed+=("$name")
    echo "FAIL: $name (exit $rc, $((SECONDS - start)) s):"
    cat "$work/$name.log"
  else
    echo "ok: $name ($((SECONDS - start)) s)"
    cat "$work/$name.log"
  fi
}

run engine_vs_llamacpp "skipped: llama.cpp not found" \
  bash "$root/bench/engine_vs_llamacpp.sh" "$no_llama" "$runner_bench" "$model"
run serve_vs_llamacpp "skipped: llama.cpp not found" \
  bash "$root/bench/serve_vs_llamacpp.sh" "$no_llama" "$tandem" "$model"
run distserve "" bash "$root/bench/distserve.sh" "$tandem"
run prefill_threshold "" bash "$root/bench/prefill_threshold.sh" "$tandem"
run kv_disk_vs_fio "| block B | record B |" bash "$root/bench/kv_disk_vs_fio.sh" "$kv_disk_bench"
run kv_tiers "G2 / off:" bash "$root/bench/kv_tiers.sh" "$tandem"
run kv_onboard "| prefix tokens |" env DISK_DIR="$work/kv-onboard-g3" bash "$root/bench/kv_onboard.sh" "$kv_onboard_bench" "$tandem"
run router_sim "decision latency: p50" bash "$root/bench/router_sim.sh" "$tandem"
run router_live "kv cached ratio" bash "$root/bench/router_live.sh" "$tandem"
run grammar_mask "qwen3      json_object" bash "$root/bench/grammar_mask.sh" "$grammar_bench" "$tandem" "$tokenizers"
run planner_sim "| mooncake | sla |" bash "$root/bench/planner_sim.sh" "$tandem"
run planner_sim_cv "| conv, mooncake, on-off, diurnal | 1, 600 s |" bash "$root/bench/planner_sim_cv.sh" "$tandem"
# the build tree's e2e npm clients (the e2e fixture installs them).
build=$(dirname "$tandem")
run soak '"errors":0' bash "$root/bench/soak.sh" "$build" 20 4 0.2 "$work/soak.json"
run bad_input '"server_alive":true' bash "$root/bench/bad_input.sh" "$build" "$work/no-fuzz-build" "$work/bad_input.json"
run faults 'faults: sigkill-decode: {"requests"' bash "$root/bench/faults.sh" "$build" 4 2 "$work/faults.json" sigkill-decode
run big_body_latency "big_body_latency: p99" bash "$root/bench/big_body_latency.sh" "$build" 1 2 2 0.5 "$work/big_body.json"
# the lent-GPU script against the host emulator's tandem_gpu_check
run gpu_prepare_carry "prepare_carry: packages:" env NO_BINARY=1 bash "$root/bench/gpu/prepare_carry.sh" "$work/gpu-carry"
run gpu_run_on_device "oracle.json: 2/2 prompts pass (token-exact, graphs off)" \
  env GPU_CHECK="$build/bench/gpu/tandem_gpu_check_emu" GPU_CARRY="$work/gpu-carry" \
  bash "$root/bench/gpu/run_on_device.sh" "$work/gpu-out"

# XZ_OPT=-0: the packing is what is checked, not xz's ratio (level 6 took
# 43 of this test's 111 s in CI; the real carry keeps it).
run gpu_pack_tandem "pack_tandem: $work/tandem.tar.xz" \
  env XZ_OPT=-0 bash "$root/bench/gpu/pack_tandem.sh" "$build" "$work/tandem.tar.xz"

if ((${#failed[@]})); then
  echo "failed: ${failed[*]}"
  exit 1
fi
echo "all ${#covered[@]} bench scripts ran in smoke mode (${SECONDS} s)"
