// kvcache/lower_tier.h — a tier below the engine's pool (G2 host, G3 disk): whole blocks by hash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "absl/status/status.h"
#include "kvcache/kv_events.h"
#include "kvcache/prefix_hash.h"

namespace tandem::kvcache {
using TierDone = std::function<void(absl::Status)>;  // called once, on the tier's completion thread (or inline)
class LowerTier {
 public:
  virtual ~LowerTier() = default;
  virtual KvTier tier() const = 0;
  virtual size_t blockBytes() const = 0;
  virtual int64_t capacityBlocks() const = 0;
  virtual int64_t numBlocks() const = 0;
  virtual bool contains(BlockHash hash) const = 0;
  // stores a copy of `data` (blockBytes() bytes) under `hash`; the tier copies `data`
  // before returning (the caller may reuse its buffer at once). false = not taken
  // (full of in-flight work / disabled / admission refused): nothing happens, done is not called.
  // LRU eviction inside the tier makes room; each eviction emits BlockRemoved{hash, tier()}
  // to the listener; a completed store emits BlockStored{hash, parent, tier()}.
  virtual bool store(BlockHash hash, BlockHash parent, std::span<const std::byte> data, TierDone done) = 0;
  // reads the block into `dst` (blockBytes() bytes; must stay valid until done).
  // NotFound when absent; DataLoss when its checksum fails (the block is then dropped,
  // BlockRemoved emitted, never served). Marks the block most-recently-used.
  virtual void load(BlockHash hash, std::span<std::byte> dst, TierDone done) = 0;
  virtual void remove(BlockHash hash) = 0;
  virtual void setEventListener(KvEventListener* listener) = 0;  // not owned; may be null
};
}
