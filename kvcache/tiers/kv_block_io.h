// Access to the bytes of the engine's KV blocks (G1) for the tiers below it.
// A block is one contiguous range of KvLayout::blockBytes() bytes (see
// kvcache/kv_layout.h), so moving it between tiers is one copy. The engine
// implements this over its model runner's KV storage.
#pragma once

#include <cstddef>
#include <span>

#include "kvcache/block_queue.h"

namespace tandem::kvcache {

class KvBlockIo {
 public:
  virtual ~KvBlockIo() = default;
  virtual size_t blockBytes() const = 0;
  // the block's bytes when the KV storage is host memory (the CPU backend):
  // tiers then copy straight from and into it. empty on a device backend.
  virtual std::span<std::byte> hostBlock(BlockId id) = 0;
  // copies the block to host memory `dst` (blockBytes() bytes). The copy
  // may still be in flight when this returns: `dst` must stay valid and
  // unread, and the block unwritten, until flush() returned.
  virtual void read(BlockId id, std::span<std::byte> dst) = 0;
  // overwrites the block with host memory `src` (blockBytes() bytes). The
  // copy may still be in flight when this returns: `src` must stay valid
  // and unchanged, and the block unread, until flush() returned.
  virtual void write(BlockId id, std::span<const std::byte> src) = 0;
  // waits for every read() and write() so far (a device backend queues them
  // on a transfer stream and waits once for a prompt's or a step's blocks).
  virtual void flush() {}
};

}  // namespace tandem::kvcache
