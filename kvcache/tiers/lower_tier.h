// A tier below the engine's block pool (G2 host memory, G3 local disk): it
// holds whole KV blocks by their chained hash (kvcache/prefix_hash.h). The
// engine offers blocks it evicts (store) and brings them back on a prefix hit
// (load); each tier keeps its own LRU and reports what it holds through the
// same KV events as the pool, tagged with its tier.
//
// Threading: every method may be called from any thread. `done` callbacks run
// once, on the tier's completion thread (or inline, before the call returns,
// where the answer is known at once); they may call back into the tier.
// Events reach the listener synchronously, in the order the changes happened;
// the listener must not call back into the tier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "absl/status/status.h"
#include "kvcache/kv_events.h"
#include "kvcache/prefix_hash.h"

namespace tandem::kvcache {

// called once with the outcome of a store or load.
using TierDone = std::function<void(absl::Status)>;

class LowerTier {
 public:
  virtual ~LowerTier() = default;

  virtual KvTier tier() const = 0;
  // bytes of one block (every store and load moves exactly this many).
  virtual size_t blockBytes() const = 0;
  // blocks the tier can hold, and blocks it holds now (readable ones).
  virtual int64_t capacityBlocks() const = 0;
  virtual int64_t numBlocks() const = 0;
  // whether a load of `hash` would find it now (a later eviction may still
  // make that load answer NotFound).
  virtual bool contains(BlockHash hash) const = 0;

  // stores a copy of `data` (blockBytes() bytes) under `hash`; the tier copies
  // `data` before returning (the caller may reuse its buffer at once).
  // true = taken: `done` is called once with the outcome (OK once the block is
  // readable, an error when the write failed and the block was dropped).
  // false = not taken (full of in-flight work / disabled / admission refused /
  // wrong size): nothing happens, done is not called.
  // LRU eviction inside the tier makes room; each eviction emits
  // BlockRemoved{hash, tier()} to the listener; a completed store emits
  // BlockStored{hash, parent, tier()}. A hash the tier already holds is taken
  // at once (done(OK) inline, the block marked most-recently-used, no event).
  virtual bool store(BlockHash hash, BlockHash parent, std::span<const std::byte> data,
                     TierDone done) = 0;

  // reads the block into `dst` (blockBytes() bytes; must stay valid until
  // done; its contents are unspecified unless done gets OK). Marks the block
  // most-recently-used. done gets:
  //   OK               dst holds the block, bit-exact as stored;
  //   NotFound         the tier does not hold `hash`;
  //   DataLoss         the stored bytes failed their checksum: the block is
  //                    dropped (BlockRemoved emitted), never served; recompute it;
  //   InvalidArgument  dst is not blockBytes() long;
  //   Unavailable      the tier is disabled (after an I/O error) or shutting down.
  virtual void load(BlockHash hash, std::span<std::byte> dst, TierDone done) = 0;

  // drops `hash` if held (BlockRemoved emitted); a load already in flight
  // still completes.
  virtual void remove(BlockHash hash) = 0;

  // where events go; not owned; may be null (events dropped).
  virtual void setEventListener(KvEventListener* listener) = 0;
};

}  // namespace tandem::kvcache
