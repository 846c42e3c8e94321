// Events a worker's KV cache emits so the router can keep an index of which
// worker holds which blocks (as Dynamo's KV events). The block pool reports
// them to a KvEventListener; a publisher (later) numbers them with a
// per-worker monotonic event_id and streams them to the router.
#pragma once

#include <cstdint>
#include <variant>

#include "kvcache/prefix_hash.h"

namespace tandem::kvcache {

// where a block lives. the block pool is the device tier (G1); host (G2) and
// disk (G3) tiers emit the same events with their own tier.
enum class KvTier : uint8_t { kDevice = 0, kHost = 1, kDisk = 2 };

// a full block with `hash` became reusable (its KV is computed and it is
// registered for prefix hits). parent_hash is kRootParentHash for the first
// block of a sequence.
struct BlockStored {
  BlockHash hash = 0;
  BlockHash parent_hash = kRootParentHash;
  KvTier tier = KvTier::kDevice;
  bool operator==(const BlockStored&) const = default;
};

// the block with `hash` is gone from `tier` (evicted or overwritten).
struct BlockRemoved {
  BlockHash hash = 0;
  KvTier tier = KvTier::kDevice;
  bool operator==(const BlockRemoved&) const = default;
};

// every cached block of the worker is gone (reset, restart).
struct AllCleared {
  bool operator==(const AllCleared&) const = default;
};

using KvEvent = std::variant<BlockStored, BlockRemoved, AllCleared>;

// receives KV events synchronously, on the thread that changed the cache, in
// the order the changes happened. implementations must be cheap and must not
// call back into the cache that emits them.
class KvEventListener {
 public:
  virtual ~KvEventListener() = default;
  virtual void onKvEvent(const KvEvent& event) = 0;
};

}  // namespace tandem::kvcache
