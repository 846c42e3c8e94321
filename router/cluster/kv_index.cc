#include "router/cluster/kv_index.h"

namespace tandem::router::cluster {
namespace {

uint32_t tierBit(int tier) { return 1u << (tier < 0 || tier > 30 ? 0 : tier); }

}  // namespace

void KvIndex::applySnapshot(const std::string& address,
                            const tandem::v1::KvSnapshotResponse& snapshot) {
  BlockSet blocks;
  blocks.reserve(snapshot.blocks_size());
  for (const tandem::v1::KvBlockStored& b : snapshot.blocks()) blocks[b.hash()] |= tierBit(b.tier());
  std::lock_guard lock(mu_);
  workers_[address] = std::move(blocks);
}

void KvIndex::applyEvent(const std::string& address, const tandem::v1::KvEvent& event) {
  std::lock_guard lock(mu_);
  BlockSet& blocks = workers_[address];
  switch (event.event_case()) {
    case tandem::v1::KvEvent::kStored:
      blocks[event.stored().hash()] |= tierBit(event.stored().tier());
      break;
    case tandem::v1::KvEvent::kRemoved: {
      auto it = blocks.find(event.removed().hash());
      if (it == blocks.end()) break;
      it->second &= ~tierBit(event.removed().tier());
      if (it->second == 0) blocks.erase(it);
      break;
    }
    case tandem::v1::KvEvent::kCleared:
      blocks.clear();
      break;
    case tandem::v1::KvEvent::EVENT_NOT_SET:
      break;
  }
}

void KvIndex::removeWorker(const std::string& address) {
  std::lock_guard lock(mu_);
  workers_.erase(address);
}

int KvIndex::leadingBlocks(const std::string& address,
                           std::span<const kvcache::BlockHash> hashes) const {
  std::lock_guard lock(mu_);
  auto it = workers_.find(address);
  if (it == workers_.end()) return 0;
  int n = 0;
  // each hash covers its whole prefix, so the first miss ends the match.
  for (kvcache::BlockHash h : hashes) {
    if (!it->second.contains(h)) break;
    ++n;
  }
  return n;
}

size_t KvIndex::numBlocks(const std::string& address) const {
  std::lock_guard lock(mu_);
  auto it = workers_.find(address);
  return it == workers_.end() ? 0 : it->second.size();
}

}  // namespace tandem::router::cluster
