#include "bench/router_sim/sim_prefix_cache.h"

namespace tandem::bench {

SimPrefixCache::SimPrefixCache(std::string address, int64_t capacity_blocks,
                               router::cluster::KvIndex* index)
    : address_(std::move(address)), capacity_blocks_(capacity_blocks), index_(index) {}

int64_t SimPrefixCache::leadingHits(const std::vector<kvcache::BlockHash>& hashes) {
  int64_t hit = 0;
  for (kvcache::BlockHash h : hashes) {
    auto it = blocks_.find(h);
    if (it == blocks_.end()) break;
    lru_.splice(lru_.begin(), lru_, it->second);
    ++hit;
  }
  return hit;
}

void SimPrefixCache::store(const std::vector<kvcache::BlockHash>& hashes) {
  for (kvcache::BlockHash h : hashes) {
    if (auto it = blocks_.find(h); it != blocks_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      continue;
    }
    if (static_cast<int64_t>(blocks_.size()) >= capacity_blocks_ && !lru_.empty()) {
      emit(lru_.back(), /*stored=*/false);
      blocks_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(h);
    blocks_.emplace(h, lru_.begin());
    emit(h, /*stored=*/true);
  }
}

void SimPrefixCache::emit(kvcache::BlockHash hash, bool stored) {
  event_.Clear();
  event_.set_event_id(next_event_id_++);
  if (stored) {
    event_.mutable_stored()->set_hash(hash);
  } else {
    event_.mutable_removed()->set_hash(hash);
  }
  index_->applyEvent(address_, event_);
}

}  // namespace tandem::bench
