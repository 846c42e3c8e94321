#include "router/cluster/kv_index.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem::router::cluster {
namespace {

constexpr int kMaxTier = 2;  // 0 device, 1 host, 2 disk
constexpr uint8_t kDeviceBit = 1;
constexpr uint8_t kHostBit = 2;

// a tier outside 0..2 (a newer worker's) counts as the slowest one.
uint8_t tierBit(int tier) { return static_cast<uint8_t>(1u << (tier < 0 || tier > kMaxTier ? kMaxTier : tier)); }

}  // namespace

KvIndex::KvIndex(KvIndexOptions options) : options_(options) {}

int KvIndex::slotLocked(const std::string& address, bool create) {
  if (last_slot_ >= 0 && workers_[last_slot_].used && workers_[last_slot_].address == address) {
    return last_slot_;
  }
  if (auto it = slots_.find(address); it != slots_.end()) {
    last_slot_ = it->second;
    return it->second;
  }
  if (!create) return -1;
  int slot = -1;
  for (size_t i = 0; i < workers_.size(); ++i) {
    if (!workers_[i].used) {
      slot = static_cast<int>(i);
      break;
    }
  }
  if (slot < 0) {
    // Holder::worker is 16 bits: a 65536th worker is not indexed (its
    // prompts read as uncached; a pool that big is not one router's).
    if (workers_.size() >= std::numeric_limits<uint16_t>::max()) return -1;
    slot = static_cast<int>(workers_.size());
    workers_.emplace_back();
  }
  Worker& w = workers_[slot];
  w = Worker{};
  w.address = address;
  w.used = true;
  slots_[address] = slot;
  return slot;
}

void KvIndex::storeLocked(int w, kvcache::BlockHash hash, int tier) {
  Worker& worker = workers_[w];
  Holders& holders = blocks_[hash];
  const uint32_t stamp = worker.next_stamp++;
  for (Holder& h : holders) {
    if (h.worker != w) continue;
    // stored again: it is the newest of the worker's blocks now.
    h.tiers |= tierBit(tier);
    h.stamp = stamp;
    worker.order.emplace_back(hash, stamp);
    compactOrderLocked(w);
    return;
  }
  holders.push_back(Holder{static_cast<uint16_t>(w), tierBit(tier), stamp});
  worker.order.emplace_back(hash, stamp);
  ++worker.count;
  ++total_;
  enforceBoundsLocked(w);
  compactOrderLocked(w);
}

void KvIndex::removeLocked(int w, kvcache::BlockHash hash, int tier) {
  auto it = blocks_.find(hash);
  if (it == blocks_.end()) return;
  Holders& holders = it->second;
  for (auto h = holders.begin(); h != holders.end(); ++h) {
    if (h->worker != w) continue;
    h->tiers &= static_cast<uint8_t>(~tierBit(tier));
    if (h->tiers == 0) {
      holders.erase(h);
      --workers_[w].count;
      --total_;
      if (holders.empty()) blocks_.erase(it);
    }
    return;
  }
}

void KvIndex::clearLocked(int w) {
  Worker& worker = workers_[w];
  for (const auto& [hash, stamp] : worker.order) {
    auto it = blocks_.find(hash);
    if (it == blocks_.end()) continue;
    Holders& holders = it->second;
    for (auto h = holders.begin(); h != holders.end(); ++h) {
      if (h->worker != w) continue;
      holders.erase(h);
      --total_;
      break;
    }
    if (holders.empty()) blocks_.erase(it);
  }
  worker.order.clear();
  worker.count = 0;
}

void KvIndex::evictOldestLocked(int w) {
  Worker& worker = workers_[w];
  while (!worker.order.empty()) {
    const auto [hash, stamp] = worker.order.front();
    worker.order.pop_front();
    auto it = blocks_.find(hash);
    if (it == blocks_.end()) continue;
    Holders& holders = it->second;
    auto h = std::find_if(holders.begin(), holders.end(), [&](const Holder& x) { return x.worker == w; });
    if (h == holders.end() || h->stamp != stamp) continue;  // stale entry
    holders.erase(h);
    if (holders.empty()) blocks_.erase(it);
    --worker.count;
    --total_;
    ++evictions_;
    return;
  }
}

void KvIndex::enforceBoundsLocked(int w) {
  while (workers_[w].count > workers_[w].limit) evictOldestLocked(w);
  if (options_.max_blocks == 0) return;
  while (total_ > options_.max_blocks) {
    int biggest = w;
    for (size_t i = 0; i < workers_.size(); ++i) {
      if (workers_[i].used && workers_[i].count > workers_[biggest].count) biggest = static_cast<int>(i);
    }
    const size_t before = total_;
    evictOldestLocked(biggest);
    if (total_ == before) return;  // nothing left to evict (cannot happen while total_ > 0)
  }
}

void KvIndex::compactOrderLocked(int w) {
  Worker& worker = workers_[w];
  if (worker.order.size() <= 2 * worker.count + 64) return;
  // drop the stale entries (blocks removed or stored again since).
  std::deque<std::pair<kvcache::BlockHash, uint32_t>> live;
  for (const auto& entry : worker.order) {
    auto it = blocks_.find(entry.first);
    if (it == blocks_.end()) continue;
    for (const Holder& h : it->second) {
      if (h.worker == w && h.stamp == entry.second) {
        live.push_back(entry);
        break;
      }
    }
  }
  worker.order.swap(live);
}

void KvIndex::applySnapshot(const std::string& address,
                            const tandem::v1::KvSnapshotResponse& snapshot) {
  std::lock_guard lock(mu_);
  const int w = slotLocked(address, true);
  if (w < 0) return;
  clearLocked(w);
  for (const tandem::v1::KvBlockStored& b : snapshot.blocks()) storeLocked(w, b.hash(), b.tier());
  workers_[w].last_event_id = snapshot.last_event_id();
}

bool KvIndex::applyEvent(const std::string& address, const tandem::v1::KvEvent& event) {
  std::lock_guard lock(mu_);
  const int w = slotLocked(address, true);
  if (w < 0) return true;
  Worker& worker = workers_[w];
  if (event.event_id() != 0) {
    if (event.event_id() <= worker.last_event_id) return true;  // a duplicate
    if (event.event_id() != worker.last_event_id + 1) return false;  // a gap
    worker.last_event_id = event.event_id();
  }
  switch (event.event_case()) {
    case tandem::v1::KvEvent::kStored:
      storeLocked(w, event.stored().hash(), event.stored().tier());
      break;
    case tandem::v1::KvEvent::kRemoved:
      removeLocked(w, event.removed().hash(), event.removed().tier());
      break;
    case tandem::v1::KvEvent::kCleared:
      clearLocked(w);
      break;
    case tandem::v1::KvEvent::EVENT_NOT_SET:
      break;
  }
  return true;
}

void KvIndex::removeWorker(const std::string& address) {
  std::lock_guard lock(mu_);
  const int w = slotLocked(address, false);
  if (w < 0) return;
  clearLocked(w);
  workers_[w] = Worker{};
  slots_.erase(address);
}

void KvIndex::setWorkerCapacity(const std::string& address, int64_t capacity_blocks) {
  std::lock_guard lock(mu_);
  const int w = slotLocked(address, true);
  if (w < 0) return;
  if (capacity_blocks <= 0) {
    workers_[w].limit = SIZE_MAX;
    return;
  }
  const double limit = std::ceil(static_cast<double>(capacity_blocks) * options_.capacity_slack) +
                       static_cast<double>(options_.capacity_floor_blocks);
  workers_[w].limit = static_cast<size_t>(std::min(limit, 1e18));
  enforceBoundsLocked(w);
}

void KvIndex::walkLocked(std::span<const kvcache::BlockHash> hashes, std::vector<TierMatch>& out) const {
  out.assign(workers_.size(), TierMatch{});
  for (size_t i = 0; i < hashes.size(); ++i) {
    auto it = blocks_.find(hashes[i]);
    if (it == blocks_.end()) return;
    const int n = static_cast<int>(i);
    bool extended = false;
    // each hash covers its whole prefix, so a worker's first miss ends its match.
    for (const Holder& h : it->second) {
      TierMatch& m = out[h.worker];
      if (m.any != n) continue;
      m.any = n + 1;
      if (m.host == n && (h.tiers & (kDeviceBit | kHostBit)) != 0) m.host = n + 1;
      if (m.device == n && (h.tiers & kDeviceBit) != 0) m.device = n + 1;
      extended = true;
    }
    if (!extended) return;
  }
}

TierMatch KvIndex::match(const std::string& address, std::span<const kvcache::BlockHash> hashes) const {
  std::lock_guard lock(mu_);
  auto slot = slots_.find(address);
  if (slot == slots_.end()) return {};
  const int w = slot->second;
  TierMatch m;
  for (kvcache::BlockHash hash : hashes) {
    auto it = blocks_.find(hash);
    if (it == blocks_.end()) break;
    auto h = std::find_if(it->second.begin(), it->second.end(), [&](const Holder& x) { return x.worker == w; });
    if (h == it->second.end()) break;
    const int n = m.any;
    m.any = n + 1;
    if (m.host == n && (h->tiers & (kDeviceBit | kHostBit)) != 0) m.host = n + 1;
    if (m.device == n && (h->tiers & kDeviceBit) != 0) m.device = n + 1;
  }
  return m;
}

int KvIndex::leadingBlocks(const std::string& address, std::span<const kvcache::BlockHash> hashes) const {
  return match(address, hashes).any;
}

std::vector<std::pair<std::string, TierMatch>> KvIndex::matchAll(
    std::span<const kvcache::BlockHash> hashes) const {
  std::vector<TierMatch> per_slot;
  std::vector<std::pair<std::string, TierMatch>> out;
  std::lock_guard lock(mu_);
  walkLocked(hashes, per_slot);
  for (size_t i = 0; i < per_slot.size(); ++i) {
    if (per_slot[i].any > 0) out.emplace_back(workers_[i].address, per_slot[i]);
  }
  return out;
}

size_t KvIndex::numBlocks(const std::string& address) const {
  std::lock_guard lock(mu_);
  auto it = slots_.find(address);
  return it == slots_.end() ? 0 : workers_[it->second].count;
}

size_t KvIndex::totalBlocks() const {
  std::lock_guard lock(mu_);
  return total_;
}

size_t KvIndex::memoryBytes() const {
  std::lock_guard lock(mu_);
  // the map's slots and control bytes, holders past each block's inline
  // one (heap, about twice their size with growth), the eviction order.
  size_t bytes = blocks_.capacity() * (sizeof(std::pair<kvcache::BlockHash, Holders>) + 1);
  bytes += (total_ - std::min(total_, blocks_.size())) * sizeof(Holder) * 2;
  for (const Worker& w : workers_) {
    bytes += sizeof(Worker) + w.order.size() * sizeof(std::pair<kvcache::BlockHash, uint32_t>);
  }
  return bytes;
}

uint64_t KvIndex::evictions() const {
  std::lock_guard lock(mu_);
  return evictions_;
}

size_t KvIndex::workerLimit(const std::string& address) const {
  std::lock_guard lock(mu_);
  auto it = slots_.find(address);
  return it == slots_.end() ? SIZE_MAX : workers_[it->second].limit;
}

}  // namespace tandem::router::cluster
