#!/usr/bin/env bash
# The layering check (cmake/check_layering.cmake) passes on the source tree
# and fails, naming the file, on a tree where a lower module includes a
# higher one: a router file including the engine, the generation value
# types including the kv cache, the engine including the router, the
# block pool including the tiers below it.
# Then, over the built libraries: no front-end library (the router's, the
# load generator's) has an undefined reference to engine or kernel code,
# while the worker's does (so the probe can see one).
# Usage: layering_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
check=$src/cmake/check_layering.cmake
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake -DROOT="$src" -P "$check"
echo "ok: the source tree passes"

# a tree with one file per case; each case alone must fail.
expect_rejected() {  # FILE INCLUDE
  rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/$(dirname "$1")"
  printf '#include "%s"\n' "$2" > "$tmp/tree/$1"
  if out=$(cmake -DROOT="$tmp/tree" -P "$check" 2>&1); then
    echo "FAIL: $1 including $2 was accepted"; exit 1
  fi
  grep -q "$1 (.*) includes $2" <<<"$out" || { echo "FAIL: no violation named for $1: $out"; exit 1; }
  echo "ok: $1 including $2 is rejected"
}
expect_accepted() {  # FILE INCLUDE
  rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/$(dirname "$1")"
  printf '#include "%s"\n' "$2" > "$tmp/tree/$1"
  cmake -DROOT="$tmp/tree" -P "$check" >/dev/null 2>&1 || { echo "FAIL: $1 including $2 was rejected"; exit 1; }
  echo "ok: $1 including $2 is accepted"
}
expect_rejected router/cluster/route_planner.cc server/engine/engine.h
expect_rejected router/generate/served_model.cc kernels/backend.h
expect_rejected router/cluster/kv_index.cc kvcache/block_pool.h
expect_rejected generation/generator.h kvcache/prefix_hash.h
expect_rejected server/engine/engine.cc router/generate/served_model.h
expect_rejected common/http/http_server.cc router/openai/api_error.h
expect_rejected text/tokenizer/tokenizer.cc server/model/weights.h
expect_rejected bench/loadgen/runner.cc server/engine/engine.h
expect_rejected kvcache/kv_cache_manager.cc kvcache/tiers/kv_tier_chain.h
expect_rejected kvcache/tiers/host_tier.cc server/engine/engine.h
expect_rejected router/cluster/kv_index.cc kvcache/tiers/kv_tier_stats.h
expect_accepted kvcache/tiers/kv_tier_chain.cc kvcache/block_pool.h
expect_accepted server/engine/tier_onboard_connector.cc kvcache/tiers/kv_tier_chain.h
expect_accepted router/cluster/kv_index.cc kvcache/prefix_hash.h
expect_accepted server/worker/worker.cc server/engine/engine_loop.h
expect_accepted cli/main.cc router/frontend/frontend_server.h
expect_rejected router/cluster/kv_index.cc fuzz/frames.h
expect_rejected fuzz/gguf_fuzzer.cc cli/commands.h
expect_accepted fuzz/kv_events_fuzzer.cc router/cluster/kv_index.h

# compiled code: what each library needs from elsewhere.
compute_refs() { nm -C --undefined-only "$1" | grep -c 'tandem::\(engine\|kernels\)::' || true; }
lib() { find "$build" -name "libtandem_$1.a" -not -path '*/tests/*' | head -1; }
for name in openai router_metrics generate router_grpc frontend cluster loadgen; do
  f=$(lib "$name")
  [[ -n "$f" ]] || { echo "FAIL: libtandem_$name.a not built under $build"; exit 1; }
  n=$(compute_refs "$f")
  [[ "$n" == 0 ]] || { echo "FAIL: libtandem_$name.a references $n engine/kernel symbols"; exit 1; }
  echo "ok: libtandem_$name.a references no engine or kernel code"
done
n=$(compute_refs "$(lib worker)")
[[ "$n" -gt 0 ]] || { echo "FAIL: the probe sees no engine reference even in libtandem_worker.a"; exit 1; }
echo "ok: the probe sees libtandem_worker.a's $n engine/kernel references"
