#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang, ASan + UBSan) in build-fuzz/
# and runs each for a bounded time from its seeds (fuzz/corpus/<target>/);
# fails on the first crash, leak, timeout or out-of-memory. What a run finds
# is written to build-fuzz/findings/<target>/ (the reproducer: crash-*,
# timeout-*, leak-*, oom-*); new interesting inputs go to
# build-fuzz/corpus/<target>/ (not the repository's seeds).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   default 10 s per target (the CI smoke, test.sh); a campaign:
#   scripts/fuzz.sh 600            (every target, 10 minutes each)
#   scripts/fuzz.sh 3600 gguf      (one target for an hour)
# Reproduce a finding: build-fuzz/fuzz/fuzz_<target> <file>
# TANDEM_FUZZ_TIMEOUT (default 10): seconds of wall time one input may take
# before it is a finding; a campaign on a machine loaded by other work (its
# inputs starved of CPU) may raise it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-10}
shift || true
build=${TANDEM_FUZZ_BUILD:-$root/build-fuzz}
all=(http_request openai_request tokenizer_json gguf safetensors chat_template
     kv_chunk kv_events worker_report disk_record grammar json_schema
     tool_definitions responses_request grpc_generate_request prometheus_text)
targets=("$@")
((${#targets[@]})) || targets=("${all[@]}")

# Debian's clang (libFuzzer ships with it); 15 before 14.
cc=""
for v in 15 14 ""; do
  if command -v "clang++${v:+-$v}" >/dev/null 2>&1; then cc=${v:+-$v}; break; fi
done
command -v "clang++$cc" >/dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 1; }
if [[ ! -f "$build/build.ninja" ]]; then
  CC="clang$cc" CXX="clang++$cc" cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_FLAGS="-O1 -g1" -DTANDEM_FUZZ=ON
fi
fuzzers=()
for t in "${targets[@]}"; do fuzzers+=(--target "fuzz_$t"); done
cmake --build "$build" -j "$(nproc)" "${fuzzers[@]}"

# detect_leaks: a parser that leaks on bad input is a finding too.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# one target: its own corpus and findings; the exit status says whether it found something.
fuzz_one() {
  local t=$1 corpus=$build/corpus/$1 findings=$build/findings/$1
  mkdir -p "$corpus" "$findings"
  # -timeout: one input taking over 10 s is a hang; -rss_limit_mb: a
  # parser that allocates without bound; -max_len: inputs up to 64 KiB
  # (the seeds are a few KB).
  "$build/fuzz/fuzz_$t" "$corpus" "$root/fuzz/corpus/$t" \
    -max_total_time="$seconds" -timeout="${TANDEM_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -max_len=65536 \
    -artifact_prefix="$findings/" -print_final_stats=1 >"$findings/log" 2>&1
}
# as many targets at once as there are cores (libFuzzer uses one each).
declare -A pids
for t in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
  fuzz_one "$t" &
  pids[$t]=$!
done
failed=()
for t in "${targets[@]}"; do
  if ! wait "${pids[$t]}"; then
    failed+=("$t")
    tail -60 "$build/findings/$t/log"
  fi
  echo "fuzz_$t: $(grep -E '^stat::number_of_executed_units' "$build/findings/$t/log" | awk '{print $2}') executions in ${seconds}s"
done
if ((${#failed[@]})); then
  echo "fuzz.sh: findings in: ${failed[*]} (reproducers in $build/findings/)" >&2
  exit 1
fi
echo "fuzz.sh: ${#targets[@]} targets, ${seconds}s each, no findings"
