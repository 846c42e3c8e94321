// Counters of one KV tier below the engine's pool (G2 host, G3 disk), kept
// by the KvTierChain for any LowerTier and exported by the worker as
// Prometheus metrics (tandem:kv_tier_*{tier}). Cumulative since start.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "kvcache/kv_events.h"

namespace tandem::kvcache {

// a latency histogram with fixed bounds (seconds, from 10 us to 10 s); a
// value falls in the first bucket whose bound is >= it (as Prometheus), the
// last bucket is +Inf.
struct TierLatency {
  static constexpr std::array<double, 14> kBounds = {
      0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
      0.005,   0.01,    0.025,  0.1,     0.5,    2.0,   10.0};
  std::array<uint64_t, kBounds.size() + 1> buckets{};
  double sum = 0.0;
  uint64_t count = 0;

  void observe(double seconds) {
    const auto it = std::lower_bound(kBounds.begin(), kBounds.end(), seconds);
    ++buckets[static_cast<size_t>(it - kBounds.begin())];
    sum += seconds;
    ++count;
  }
};

// "device", "host", "disk": the tier's label in metrics and logs.
inline std::string_view kvTierName(KvTier tier) {
  switch (tier) {
    case KvTier::kDevice: return "device";
    case KvTier::kHost: return "host";
    case KvTier::kDisk: return "disk";
  }
  return "unknown";
}

struct KvTierStats {
  KvTier tier = KvTier::kHost;
  // how the tier moves bytes: "memcpy" for G2; G3 names its io mode.
  std::string io_mode;
  int64_t capacity_blocks = 0;
  int64_t used_blocks = 0;
  // blocks found here when a prompt looked past its G1 prefix hits.
  uint64_t hits = 0;
  // blocks brought back from here into G1 (loads that succeeded).
  uint64_t onboards = 0;
  // loads that failed (NotFound, DataLoss, ...): the prompt recomputes them.
  uint64_t load_failures = 0;
  // blocks stored here: evicted from G1 (top tier) or demoted from above.
  uint64_t offloads = 0;
  // stores the tier refused (admission, full of work, disabled).
  uint64_t admission_rejections = 0;
  // stores the tier took whose write then failed (the block was dropped).
  uint64_t write_failures = 0;
  // blocks that left the tier (LRU eviction or removal).
  uint64_t evictions = 0;
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  TierLatency read_seconds;
  TierLatency write_seconds;
};

}  // namespace tandem::kvcache
