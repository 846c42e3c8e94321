#!/usr/bin/env bash
# The one GPU check, for a lent GPU machine (nvcc, cmake, ninja, PyTorch; no
# system packages, no network): everything the GPU issues measure, in one
# run of at most BUDGET seconds (default 480), each step with its own
# timeout and skipped when the budget is spent, most valuable first:
#   info         the device, which GEMM path the backend takes
#   bench        tandem_gpu_check bench: decode GEMVs (dense and quantized),
#                decode attention, prefill GEMMs, prefill attention, beside
#                the vendor BLAS in the same binary (kernel_bench.h)
#   parity       every hip op against the reference, on the device (--large)
#   oracle       stories260K greedy: F32 token-exact eager and from graphs,
#                Q8_0 by llama.cpp's 0.05 top-2-gap rule
#   torch        bench/gpu/torch_peer.py: cuBLAS and FlashAttention on the
#                same shapes (when python3 has torch)
#   e2e          synthetic Llama-3.2-1B and Llama-3-8B shapes (F16, Q4_K_M)
#                written by `tandem model synth`, then `tandem_gpu_check e2e`:
#                decode tok/s at batch 1/16/64 (graphs and eager) and prefill
#                tok/s against their rooflines; needs the tandem bundle
#   pd           `tandem serve --backend hip` on the 1B shape (a tokenizer:
#                TOKENIZER_DIR, default GPU_CARRY/tokenizer-llama3) with a
#                prefill and a decode worker (every prompt prefilled remotely)
#                and with one aggregated worker: `tandem bench` TTFT of
#                4k-token prompts, one at a time
#   generate     one greedy request of stories260K through the real binary
#                (`tandem generate --backend hip`, graphs on), for the record
# Results: OUTDIR/summary.md (bench/gpu/summarize.py) and OUTDIR/results.tar.gz
# (every report and log): two files, as a lent machine returns few.
#
#   bash bench/gpu/run_on_device.sh [OUTDIR]       (OUTDIR default: $OUT)
# Environment:
#   GPU_CHECK     a built tandem_gpu_check (default: build-gpucarry/bin's, made
#                 by prepare_carry.sh; else built here against GPU_CARRY/deps)
#   TANDEM_BUNDLE bench/gpu/pack_tandem.sh's tar.xz (default
#                 build-gpucarry/tandem.tar.xz); without it no e2e/generate
#   STEPS         which steps (default: info,bench,parity,oracle,torch,e2e,pd,generate)
#   BUDGET        seconds for the whole run (default 480)
#   REPEATS       timing repeats (default 7)
#   SMOKE=1       tiny shapes on the host emulator (CI: tests/bench)
# Exit status: 0 when parity and the oracles pass, 1 otherwise.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${OUT:-/tmp/tandem-gpu-check}}
carry=${GPU_CARRY:-$root/build-gpucarry}
smoke=${SMOKE:-0}
repeats=${REPEATS:-7}
budget=${BUDGET:-480}
steps=${STEPS:-info,bench,parity,oracle,torch,e2e,pd,generate}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# the reports gather outside OUTDIR: only summary.md and the archive go there
res=$(mktemp -d /tmp/tandem-gpu-results.XXXXXX)
cd "$root"
start=$(date +%s)
log() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$res/run.log"; }
wants() { [[ ",$steps," == *",$1,"* ]]; }
# a step runs when the budget still has `need` seconds; it gets the rest, at most `cap`
left() { echo $(( budget - ($(date +%s) - start) )); }
fits() { (( $(left) >= $1 )); }
limit() { local l; l=$(left); (( l < $1 )) && echo "$l" || echo "$1"; }

{
  date -u; uname -a
  command -v nvidia-smi >/dev/null && nvidia-smi
  command -v rocm-smi >/dev/null && rocm-smi
  nvcc=$(command -v nvcc || true)
  [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
  [[ -n $nvcc ]] && "$nvcc" --version
  lscpu | grep -m1 "Model name"; nproc; free -g
} > "$res/device.txt" 2>&1

# --- the check: carried, given, or built here ---
check=${GPU_CHECK:-}
[[ -z $check && -x $carry/bin/tandem_gpu_check && $smoke != 1 ]] && check=$carry/bin/tandem_gpu_check
if [[ -z $check ]]; then
  vendor=${GPU_VENDOR:-}
  if [[ -z $vendor ]]; then
    if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then vendor=cuda; else vendor=hip; fi
  fi
  deps=
  [[ -d $carry/deps ]] && deps=$carry/deps
  if TANDEM_GPU_BUILD_JOBS=$(nproc) bash bench/gpu/build_check.sh "$vendor" "$root/build-gpudevice-$vendor" $deps \
       > "$res/build.log" 2>&1; then
    check=$root/build-gpudevice-$vendor/tandem_gpu_check
  else
    log "no tandem_gpu_check (see build.log)"; tail -20 "$res/build.log"; exit 1
  fi
fi
log "check: $check"

# --- the vendor BLAS: the loader's, the toolkit's, or PyTorch's copy ---
if [[ -z ${TANDEM_VENDOR_BLAS_LIB:-} ]] && ! ldconfig -p 2>/dev/null | grep -q libcublasLt.so; then
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
             $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in os.listdir(p)))' 2>/dev/null); do
    lib=$(ls "$dir"/libcublasLt.so.1[0-9]* 2>/dev/null | sort -V | tail -1)
    if [[ -n $lib ]]; then export TANDEM_VENDOR_BLAS_LIB=$lib; break; fi
  done
fi
log "vendor BLAS: ${TANDEM_VENDOR_BLAS_LIB:-from the loader path}"

status=0
run() {  # run NAME TIMEOUT CMD...: stdout to NAME.json, stderr to NAME.err
  local name=$1 t=$2; shift 2
  local s=$(date +%s)
  timeout "$t" "$@" --out "$res/$name.json" > /dev/null 2> "$res/$name.err"
  local rc=$?
  log "$name: exit $rc in $(( $(date +%s) - s )) s"
  return $rc
}

if ! "$check" info --out "$res/info.json" > /dev/null 2> "$res/info.err"; then
  log "$(cat "$res/info.err"): nothing to check here"; exit 1
fi
if [[ $smoke == 1 ]]; then
  bench=(--small --repeats 2) parity=() oracle=(--prompts 2 --tokens 4)
  e2e_run=(--small --decode-steps 4 --repeats 1)
else
  bench=(--repeats "$repeats") parity=(--large) oracle=() e2e_run=(--decode-steps 32 --repeats 2)
fi
models=$root/models/stories260K
wants bench && fits 60 && run bench "$(limit 200)" "$check" bench "${bench[@]}"
wants parity && fits 30 && { run parity "$(limit 120)" "$check" parity "${parity[@]}" || status=1; }
if wants oracle && fits 20; then
  run oracle "$(limit 60)" "$check" oracle "${oracle[@]}" --model "$models/gguf/stories260K.gguf" \
    --oracle "$models/greedy_oracle.json" || status=1
  run oracle_graphs "$(limit 60)" "$check" oracle "${oracle[@]}" --graphs \
    --model "$models/gguf/stories260K.gguf" --oracle "$models/greedy_oracle.json" || status=1
  run oracle_q8_0 "$(limit 60)" "$check" oracle "${oracle[@]}" --tie-gap 0.05 \
    --model "$models/gguf/stories260K-q8_0.gguf" --oracle "$models/greedy_oracle_q8_0.json" || status=1
fi
if wants torch && [[ $smoke != 1 ]] && fits 60 && python3 -c 'import torch' 2>/dev/null; then
  s=$(date +%s)
  timeout "$(limit 150)" python3 bench/gpu/torch_peer.py > "$res/torch.json" 2> "$res/torch.err"
  log "torch: exit $? in $(( $(date +%s) - s )) s"
fi

# --- end to end: synthetic models through the real binary's writer ---
bundle=${TANDEM_BUNDLE:-$carry/tandem.tar.xz}
tandem=
if [[ -f $bundle ]] && (wants e2e || wants generate); then
  mkdir -p /tmp/tandem-bundle && tar xJf "$bundle" -C /tmp/tandem-bundle
  tandem="env LD_LIBRARY_PATH=/tmp/tandem-bundle/lib /tmp/tandem-bundle/tandem"
  log "tandem: unpacked from $bundle"
elif [[ $smoke == 1 ]]; then
  tandem=$root/build/tandem
fi
work=${MODEL_DIR:-/tmp/tandem-models}
l1b=dim=2048,layers=16,heads=32,kv_heads=8,ffn=8192,vocab=128256
l8b=dim=4096,layers=32,heads=32,kv_heads=8,ffn=14336,vocab=128256
mkdir -p "$work"
synth() {  # synth NAME SHAPE DTYPE
  local s=$(date +%s)
  [[ -f $work/$1.gguf ]] || $tandem model synth --out "$work/$1.gguf" --format gguf \
      --shape "$2" --dtype "$3" ${4:+--vocab-from "$4"} > "$res/synth_$1.log" 2>&1
  log "synth $1: $(du -h "$work/$1.gguf" 2>/dev/null | cut -f1) in $(( $(date +%s) - s )) s"
}
if [[ -n $tandem ]] && wants e2e; then
  if [[ $smoke == 1 ]]; then
    shapes=("tiny-f16|dim=64,layers=2,heads=4,kv_heads=2,ffn=128,vocab=256|f16|16,32|1,4")
  else
    shapes=("llama1b-f16|$l1b|f16|512,2048,8192|1,16,64" "llama8b-f16|$l8b|f16|512,2048|1,16,64"
            "llama8b-q4_k_m|$l8b|q4_k_m|512,2048|1,16,64" "llama1b-q4_k_m|$l1b|q4_k_m|512,2048|1,16,64")
  fi
  for s in "${shapes[@]}"; do
    IFS='|' read -r name shape dtype prompts batches <<< "$s"
    fits 45 || { log "e2e $name: skipped (budget)"; continue; }
    synth "$name" "$shape" "$dtype"
    run "e2e_$name" "$(limit 150)" "$check" e2e "${e2e_run[@]}" --model "$work/$name.gguf" \
      --prompts "$prompts" --batches "$batches"
    [[ $smoke == 1 ]] || rm -f "$work/$name.gguf"  # the disk holds one 8B at a time
  done
fi
# --- disaggregated prefill on the GPU: TTFT of 4k-token prompts through
# `tandem serve` with a prefill and a decode worker (every prompt prefilled
# remotely) and with one aggregated worker, both on this device ---
pd_serve() {  # pd_serve MODE MODEL: serve, 8 requests of 4096 tokens, stop
  local mode=$1 model=$2 args=()
  [[ $mode == pd ]] && args=(--prefill-workers 1 --decode-workers 1 --max-local-prefill-tokens 0)
  [[ $mode == agg ]] && args=(--prefill-workers 0 --decode-workers 1)
  $tandem serve --model "$model" --backend "${PD_BACKEND:-hip}" --kv-cache-dtype f16 --http-port 18000 \
    --grpc-port 18001 "${args[@]}" > "$res/serve_$mode.log" 2>&1 &
  local pid=$! ok=0
  for _ in $(seq 240); do
    if python3 -c 'import urllib.request,sys; urllib.request.urlopen("http://127.0.0.1:18000/health", timeout=1)' 2>/dev/null; then ok=1; break; fi
    sleep 0.5
  done
  if [[ $ok == 1 ]]; then
    timeout "$(limit 120)" $tandem bench --url http://127.0.0.1:18000 --input-len "${PD_TOKENS:-4096}" \
      --output-len 16 --concurrency 1 --num-requests 8 --tokenizer "$model" \
      --out "$res/pd_$mode.json" > "$res/pd_bench_$mode.log" 2>&1
    log "pd $mode: bench exit $?"
  else
    log "pd $mode: the server never became healthy (serve_$mode.log)"
  fi
  kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
}
if [[ -n $tandem ]] && wants pd && fits 90; then
  tok=${TOKENIZER_DIR:-$carry/tokenizer-llama3}
  if [[ $smoke == 1 ]]; then  # the cpu, stories260K's context
    pd_model=$root/models/stories260K/gguf/stories260K.gguf
    export PD_BACKEND=cpu PD_TOKENS=200
  else
    synth llama1b-f16-tok "$l1b,max_pos=8192" f16 "$tok"
    pd_model=$work/llama1b-f16-tok.gguf
  fi
  pd_serve pd "$pd_model"
  pd_serve agg "$pd_model"
fi

if [[ -n $tandem && $smoke != 1 ]] && wants generate && fits 30; then
  s=$(date +%s)
  timeout "$(limit 60)" $tandem generate --backend hip --model "$models/gguf/stories260K.gguf" \
    --prompt "Once upon a time" --max-tokens 48 --json > "$res/generate_hip.json" 2> "$res/generate_hip.err"
  log "generate (hip, stories260K): exit $? in $(( $(date +%s) - s )) s"
fi

python3 bench/gpu/summarize.py "$res" > "$out/summary.md" 2> "$res/summarize.err" ||
  log "no summary (python3)"
tar czf "$out/results.tar.gz" -C "$(dirname "$res")" "$(basename "$res")"
log "done in $(( $(date +%s) - start )) s; results in $out"
cat "$out/summary.md"
exit $status
