#include "kvcache/kv_event_log.h"

#include <type_traits>
#include <utility>

#include "absl/strings/str_format.h"

namespace tandem::kvcache {

KvEventLog::KvEventLog(size_t capacity) : capacity_(capacity > 0 ? capacity : 1) {}

void KvEventLog::onKvEvent(const KvEvent& event) {
  {
    std::lock_guard lock(mu_);
    std::visit(
        [this](const auto& e) {
          using T = std::decay_t<decltype(e)>;
          if constexpr (std::is_same_v<T, BlockStored>) {
            stored_[{e.hash, e.tier}] = e.parent_hash;
          } else if constexpr (std::is_same_v<T, BlockRemoved>) {
            stored_.erase(std::make_pair(e.hash, e.tier));
          } else {
            stored_.clear();
          }
        },
        event);
    events_.push_back({++last_id_, event});
    if (events_.size() > capacity_) events_.pop_front();
  }
  cv_.notify_all();
}

absl::StatusOr<std::vector<NumberedKvEvent>> KvEventLog::readAfter(
    uint64_t after_id, size_t max_events, std::chrono::milliseconds wait) const {
  std::unique_lock lock(mu_);
  // an id this log never issued comes from an earlier life of the worker:
  // waiting would silently skip this life's events, so make it resync.
  if (after_id > last_id_) {
    return absl::OutOfRangeError(absl::StrFormat(
        "KV event %d was never issued (last: %d); resync from a snapshot", after_id, last_id_));
  }
  if (last_id_ <= after_id) {
    cv_.wait_for(lock, wait, [&] { return last_id_ > after_id || woken_; });
  }
  std::vector<NumberedKvEvent> out;
  if (last_id_ <= after_id) return out;
  const uint64_t oldest = events_.empty() ? last_id_ + 1 : events_.front().event_id;
  if (after_id + 1 < oldest) {
    return absl::OutOfRangeError(absl::StrFormat(
        "KV event %d is no longer kept (oldest kept: %d); resync from a snapshot",
        after_id + 1, oldest));
  }
  for (size_t i = after_id + 1 - oldest; i < events_.size() && out.size() < max_events; ++i) {
    out.push_back(events_[i]);
  }
  return out;
}

KvSnapshot KvEventLog::snapshot() const {
  std::lock_guard lock(mu_);
  KvSnapshot snap;
  snap.last_event_id = last_id_;
  snap.blocks.reserve(stored_.size());
  for (const auto& [key, parent] : stored_) {
    snap.blocks.push_back(BlockStored{key.first, parent, key.second});
  }
  return snap;
}

uint64_t KvEventLog::lastEventId() const {
  std::lock_guard lock(mu_);
  return last_id_;
}

void KvEventLog::wakeAll() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

}  // namespace tandem::kvcache
