#!/usr/bin/env bash
# What to run on a lent GPU machine (an NVIDIA H100/H200 with nvcc, cmake and
# ninja, offline, no system packages): builds tandem_gpu_check there
# (bench/gpu/CMakeLists.txt against the packages of build-gpucarry/deps, made
# here by prepare_carry.sh), then runs the hip backend's parity on the
# device, the stories260K greedy oracle through it, and the kernel
# benchmarks. Results go to OUTDIR (default $OUT, the device tool's folder):
#   device.txt   nvidia-smi / rocm-smi, nvcc --version; info.json the device
#   build.log    the build there (or why the carried binary was used)
#   parity.json  oracle.json  bench.json   tandem_gpu_check's reports
#   summary.md   the numbers in one table, for bench/RESULTS.md
# From the repository root:   bash bench/gpu/run_on_device.sh [OUTDIR]
# Environment: GPU_CARRY (default build-gpucarry), GPU_VENDOR (cuda or hip;
# default: cuda if nvcc is found), GPU_CHECK (a built tandem_gpu_check: no
# build), REPEATS (default 7), SMOKE=1 (tiny shapes, a few oracle tokens:
# tests/bench/scripts_smoke_test.sh runs it so against the host emulator).
# Exit status: 0 when parity and oracle pass, 1 otherwise.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${OUT:-/tmp/tandem-gpu-check}}
carry=${GPU_CARRY:-$root/build-gpucarry}
smoke=${SMOKE:-0}
repeats=${REPEATS:-7}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"
start=$(date +%s)

{
  date -u
  uname -a
  command -v nvidia-smi >/dev/null && nvidia-smi
  command -v rocm-smi >/dev/null && rocm-smi
  nvcc=$(command -v nvcc || true)
  [[ -z $nvcc && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
  [[ -n $nvcc ]] && "$nvcc" --version
  command -v hipcc >/dev/null && hipcc --version
  command -v cmake >/dev/null && cmake --version | head -1
  lscpu | grep -m1 "Model name"
} > "$out/device.txt" 2>&1

# --- the binary: built here, else the carried one ---
check=${GPU_CHECK:-}
if [[ -n $check ]]; then
  echo "using GPU_CHECK=$check (no build)" > "$out/build.log"
else
  vendor=${GPU_VENDOR:-}
  if [[ -z $vendor ]]; then
    if command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]]; then vendor=cuda; else vendor=hip; fi
  fi
  deps=
  [[ -d $carry/deps ]] && deps=$carry/deps
  if TANDEM_GPU_BUILD_JOBS=$(nproc) bash bench/gpu/build_check.sh "$vendor" "$root/build-gpudevice-$vendor" $deps \
       > "$out/build.log" 2>&1; then
    check=$root/build-gpudevice-$vendor/tandem_gpu_check
  elif [[ -x $carry/bin/tandem_gpu_check ]]; then
    echo "the build here failed: using the carried $carry/bin/tandem_gpu_check" >> "$out/build.log"
    check=$carry/bin/tandem_gpu_check
  else
    echo "run_on_device: no tandem_gpu_check (see $out/build.log)"
    tail -20 "$out/build.log"
    exit 1
  fi
fi
echo "run_on_device: $check ($(( $(date +%s) - start )) s)"

if ! "$check" info > "$out/info.json" 2> "$out/info.err"; then
  echo "run_on_device: $(cat "$out/info.err"): nothing to check here"
  exit 1
fi
rm -f "$out/info.err"

status=0
if [[ $smoke == 1 ]]; then
  parity=() oracle=(--prompts 2 --tokens 4) bench=(--small --repeats 3)
else
  parity=(--large) oracle=() bench=(--repeats "$repeats")
fi
"$check" parity "${parity[@]}" --out "$out/parity.json" > /dev/null || status=1
"$check" oracle "${oracle[@]}" --out "$out/oracle.json" > /dev/null || status=1
"$check" bench "${bench[@]}" --out "$out/bench.json" > /dev/null || status=1

# --- one table of the numbers ---
python3 - "$out" > "$out/summary.md" <<'PY' || echo "run_on_device: no summary (python3)" >&2
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except (OSError, ValueError):
        return None
parity, oracle, bench = load("parity.json"), load("oracle.json"), load("bench.json")
dev = (parity or oracle or bench or {}).get("device", {})
print(f"device: {dev.get('name')} ({dev.get('vendor')}, {dev.get('multiprocessors')} multiprocessors, "
      f"{dev.get('memory_bytes', 0) / 2**30:.0f} GiB)\n")
if parity:
    print(f"parity: {parity['total'] - parity['failed']}/{parity['total']} cases within tolerance")
if oracle:
    print(f"oracle: {oracle['exact']}/{oracle['total']} stories260K prompts token-exact")
if bench:
    b = bench["bench"]
    print(f"\ncopy: {b['copy']['value']:.0f} {b['copy']['unit']}; peak {b['peak_tflops_f16_bf16']} TFLOP/s ({b['peak_source']})\n")
    print("| kernel | median | result | fraction |")
    print("| --- | --- | --- | --- |")
    for kind, frac in (("gemv", "fraction_of_copy_bandwidth"), ("gemm", "fraction_of_peak"),
                       ("attention", "fraction_of_copy_bandwidth")):
        for e in b.get(kind, []):
            f = e.get(frac)
            print(f"| {e['name']} | {e['median_s'] * 1e6:.1f} us | {e['value']:.3g} {e['unit']} | "
                  f"{'-' if f is None else f'{f:.1%}'} of {'copy' if 'copy' in frac else 'peak'} |")
PY
cat "$out/summary.md"
echo "run_on_device: done in $(( $(date +%s) - start )) s, results in $out"
exit $status
