#!/usr/bin/env bash
# Compares tandem's cpu model runner with llama.cpp on the same GGUF models:
# prefill (pp), batch-1 decode (tg) and tandem's aggregate decode of a batch.
# The machine is shared and its load drifts, so the two programs run
# interleaved, one repeat each in turn (tandem, llama, tandem, llama, ...),
# and the table shows medians and the ratio tandem / llama.cpp.
#
#   bench/engine_vs_llamacpp.sh LLAMA_BIN_DIR TANDEM_BENCH MODEL.gguf [MODEL.gguf ...]
#
# Models of any dtype both compute: F32, F16, and the quantized Q8_0 and
# Q4_K_M (e.g. `tandem model synth --format gguf --dtype q8_0|q4_k_m ...`).
# TANDEM_BENCH is the model_runner_bench binary. Environment: THREADS (2),
# REPEATS (5), PROMPT (512), DECODE (128), BATCH (16), BATCH_DECODE (32).
# SMOKE=1: one repeat of a 16-token prompt and 8 decoded tokens, which checks
# the script end to end. Without LLAMA_BIN_DIR/llama-bench, llama.cpp's turns
# are skipped (said so) and tandem's still run.
set -euo pipefail

if [[ $# -lt 3 ]]; then
  sed -n '2,16p' "$0" >&2
  exit 2
fi
llama_bin=$1 tandem_bench=$2
shift 2
if [[ "${SMOKE:-0}" == 1 ]]; then
  defaults=(1 16 8 2 4)
else
  defaults=(5 512 128 16 32)
fi
threads=${THREADS:-2} repeats=${REPEATS:-${defaults[0]}} prompt=${PROMPT:-${defaults[1]}}
decode=${DECODE:-${defaults[2]}} batch=${BATCH:-${defaults[3]}} batch_decode=${BATCH_DECODE:-${defaults[4]}}
have_llama=1
if [[ ! -x "$llama_bin/llama-bench" ]]; then
  have_llama=0
  echo "skipped: llama.cpp not found ($llama_bin/llama-bench); running tandem's side only"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() {  # median of the numbers on stdin
  sort -g | awk '{v[NR] = $1} END {if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2];
                 else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

rows=()
for model in "$@"; do
  name=$(basename "$model" .gguf)
  t_out="$work/$name.tandem" l_out="$work/$name.llama"
  : > "$t_out"
  : > "$l_out"
  for ((r = 1; r <= repeats; ++r)); do
    echo "[$name] round $r/$repeats: tandem" >&2
    "$tandem_bench" --model "$model" --threads "$threads" --repeats 1 --prompt "$prompt" \
      --decode "$decode" --batch "$batch" --batch-decode "$batch_decode" | grep '^RESULT' >> "$t_out"
    ((have_llama)) || continue
    echo "[$name] round $r/$repeats: llama.cpp" >&2
    # csv columns: n_prompt and n_gen name the test, avg_ts is its tok/s
    "$llama_bin/llama-bench" -m "$model" -t "$threads" -p "$prompt" -n "$decode" -r 1 -o csv \
      2>/dev/null | awk -F, -v q='"' '
        NR == 1 {for (i = 1; i <= NF; ++i) {gsub(q, "", $i); col[$i] = i}; next}
        {gsub(q, ""); p = $col["n_prompt"]; g = $col["n_gen"];
         printf "RESULT %s %.2f\n", (g > 0 ? "tg" g : "pp" p), $col["avg_ts"]}' >> "$l_out"
  done
  for test in "pp$prompt" "tg$decode"; do
    t=$(awk -v t="$test" '$2 == t {print $3}' "$t_out" | median)
    if [[ "$t" == nan ]]; then
      echo "tandem gave no $test result for $name" >&2
      exit 1
    fi
    if ((have_llama)); then
      l=$(awk -v t="$test" '$2 == t {print $3}' "$l_out" | median)
      ratio=$(awk -v a="$t" -v b="$l" 'BEGIN {printf "%.2f", a / b}')
    else
      l="—" ratio="—"
    fi
    rows+=("| $name | $test | $t | $l | $ratio |")
  done
  agg="tg${batch_decode}x${batch}"
  t=$(awk -v t="$agg" '$2 == t {print $3}' "$t_out" | median)
  t1=$(awk -v t="tg$decode" '$2 == t {print $3}' "$t_out" | median)
  rows+=("| $name | $agg (aggregate) | $t | — | $(awk -v a="$t" -v b="$t1" 'BEGIN {printf "%.2f", a / b}')× tandem tg$decode |")
done

echo
echo "threads $threads, median of $repeats interleaved repeats, tok/s"
echo
echo "| model | test | tandem | llama.cpp | tandem / llama.cpp |"
echo "|---|---|---:|---:|---:|"
printf '%s\n' "${rows[@]}"
echo
echo "every round, tok/s (tandem | llama.cpp):"
for model in "$@"; do
  name=$(basename "$model" .gguf)
  for test in "pp$prompt" "tg$decode" "tg${batch_decode}x${batch}"; do
    t=$(awk -v t="$test" '$2 == t {printf "%s ", $3}' "$work/$name.tandem")
    l=$(awk -v t="$test" '$2 == t {printf "%s ", $3}' "$work/$name.llama")
    echo "  $name $test: ${t:-—}| ${l:-—}"
  done
done
