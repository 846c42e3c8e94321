#include "kvcache/block_queue.h"

#include "common/status.h"

namespace tandem::kvcache {

BlockQueue::BlockQueue(int capacity)
    : prev_(capacity, kNone), next_(capacity, kNone), queued_(capacity, false) {
  TANDEM_CHECK(capacity >= 0);
}

bool BlockQueue::contains(BlockId id) const {
  return id >= 0 && id < static_cast<BlockId>(queued_.size()) && queued_[id];
}

void BlockQueue::pushBack(BlockId id) {
  TANDEM_CHECK(id >= 0 && id < static_cast<BlockId>(queued_.size()));
  TANDEM_CHECK(!queued_[id]);
  queued_[id] = true;
  prev_[id] = tail_;
  next_[id] = kNone;
  if (tail_ != kNone) {
    next_[tail_] = id;
  } else {
    head_ = id;
  }
  tail_ = id;
  ++size_;
}

std::optional<BlockId> BlockQueue::popFront() {
  if (head_ == kNone) return std::nullopt;
  const BlockId id = head_;
  remove(id);
  return id;
}

std::optional<BlockId> BlockQueue::front() const {
  if (head_ == kNone) return std::nullopt;
  return head_;
}

void BlockQueue::remove(BlockId id) {
  TANDEM_CHECK(contains(id));
  const BlockId p = prev_[id];
  const BlockId n = next_[id];
  if (p != kNone) {
    next_[p] = n;
  } else {
    head_ = n;
  }
  if (n != kNone) {
    prev_[n] = p;
  } else {
    tail_ = p;
  }
  prev_[id] = kNone;
  next_[id] = kNone;
  queued_[id] = false;
  --size_;
}

std::vector<BlockId> BlockQueue::toVector() const {
  std::vector<BlockId> out;
  out.reserve(size_);
  for (BlockId id = head_; id != kNone; id = next_[id]) out.push_back(id);
  return out;
}

}  // namespace tandem::kvcache
