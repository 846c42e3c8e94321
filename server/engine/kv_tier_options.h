// The KV tiers below an engine's pool, as the command line describes them
// (--kv-host-bytes, --kv-disk-*): G2 host memory and G3 file(s) on local
// NVMe. EngineAssembly builds them into a kvcache::KvTierChain.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "kvcache/tiers/lower_tier.h"
#include "kvcache/tiers/model_fingerprint.h"

namespace tandem::engine {

struct KvTierOptions {
  // G2 capacity in bytes (whole blocks); 0 = no G2.
  uint64_t host_bytes = 0;
  // G3: preallocated file(s) in this directory; empty = no G3.
  std::string disk_path;
  uint64_t disk_bytes = 0;
  // "uring" or "threads" (kvcache::DiskIoMode).
  std::string disk_io = "uring";
  int disk_queue_depth = 32;
  // G3 admission: a block is written once offered this many times.
  int disk_min_hits = 2;
};

// what opening G3 needs beyond the options.
struct DiskTierRequest {
  KvTierOptions options;
  size_t block_bytes = 0;
  // the model's KV identity (weights_id left 0 here: the opener computes it).
  kvcache::ModelFingerprint fingerprint;
};

struct OpenedDiskTier {
  std::unique_ptr<kvcache::LowerTier> tier;
  // the io mode in use, for the metrics ("uring", "threads", ...).
  std::string io_mode;
  // (hash, parent) of the blocks found at open (DiskTier::recovered()),
  // republished as BlockStored{.., kDisk} so the router's index learns them.
  std::vector<std::pair<kvcache::BlockHash, kvcache::BlockHash>> recovered;
};

// opens G3; errors are reported at start (the process does not serve).
using DiskTierOpener = std::function<absl::StatusOr<OpenedDiskTier>(const DiskTierRequest&)>;

}  // namespace tandem::engine
