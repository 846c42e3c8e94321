// The engine's flags, shared by every subcommand that runs an engine
// (generate, serve, worker): threads, KV cache budget and block size,
// batching limits, context length, prefix caching.
#pragma once

#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "server/engine/engine_assembly.h"

namespace tandem::cli {

struct EngineFlags {
  engine::EngineAssemblyOptions options;
  std::string kv_budget;
  bool no_prefix_cache = false;
};

// adds --threads, --kv-budget, --block-size, --max-num-seqs,
// --max-batched-tokens, --chunk-size, --max-model-len, --no-prefix-cache.
void addEngineFlags(CLI::App* cmd, EngineFlags* flags);

// the options the flags describe; InvalidArgument for a --kv-budget that
// does not parse.
absl::StatusOr<engine::EngineAssemblyOptions> engineOptions(const EngineFlags& flags);

}  // namespace tandem::cli
