// The engine's flags, shared by every subcommand that runs an engine
// (generate, serve, worker): the compute backend and its device, threads, KV cache budget and block size,
// batching limits, context length, prefix caching, and the KV tiers below
// the pool (G2 host memory, G3 disk).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "server/engine/engine_assembly.h"

namespace tandem::cli {

struct EngineFlags {
  engine::EngineAssemblyOptions options;
  std::string backend = "cpu";
  std::string kv_budget;
  bool no_prefix_cache = false;
  std::string kv_host_bytes = "0";
  std::string kv_disk_bytes;
  std::string kv_cache_dtype = "auto";
};

// adds --backend, --device, --threads, --kv-budget, --block-size, --kv-cache-dtype,
// --max-num-seqs,
// --max-batched-tokens, --chunk-size, --max-model-len, --no-prefix-cache, --enforce-eager,
// --kv-host-bytes, --kv-disk-path, --kv-disk-bytes, --kv-disk-io,
// --kv-disk-queue-depth, --kv-disk-min-hits.
void addEngineFlags(CLI::App* cmd, EngineFlags* flags);

// the options the flags describe; InvalidArgument for a --backend that is
// neither cpu nor hip, a --kv-budget or a
// size that does not parse, and for disk-tier flags that do not fit
// together (--kv-disk-bytes without --kv-disk-path or the reverse).
absl::StatusOr<engine::EngineAssemblyOptions> engineOptions(const EngineFlags& flags);

// a byte size: digits with an optional K, M or G suffix (powers of 1024),
// e.g. "512M". InvalidArgument naming `flag` when it does not parse or
// overflows; "0" only when `allow_zero`.
absl::StatusOr<uint64_t> parseByteSize(std::string_view flag, const std::string& text,
                                       bool allow_zero);

}  // namespace tandem::cli
