// An intrusive doubly linked queue of block ids (as vLLM's
// FreeKVCacheBlockQueue): O(1) push to the tail, pop from the head, and
// removal of any block from the middle, with no allocation after
// construction. The block pool keeps its free list and its LRU of
// free-but-cached blocks in two of these.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tandem::kvcache {

using BlockId = int32_t;

class BlockQueue {
 public:
  // an empty queue able to hold block ids [0, capacity).
  explicit BlockQueue(int capacity);

  bool empty() const { return size_ == 0; }
  int size() const { return size_; }
  bool contains(BlockId id) const;

  // appends `id`, which must not be queued already.
  void pushBack(BlockId id);
  // removes and returns the head, or nullopt when empty.
  std::optional<BlockId> popFront();
  // the head without removing it, or nullopt when empty.
  std::optional<BlockId> front() const;
  // removes `id`, which must be queued.
  void remove(BlockId id);
  // ids from head to tail (for tests and debugging).
  std::vector<BlockId> toVector() const;

 private:
  static constexpr BlockId kNone = -1;

  std::vector<BlockId> prev_;
  std::vector<BlockId> next_;
  std::vector<bool> queued_;
  BlockId head_ = kNone;
  BlockId tail_ = kNone;
  int size_ = 0;
};

}  // namespace tandem::kvcache
