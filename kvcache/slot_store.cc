#include "kvcache/slot_store.h"

#include "common/status.h"

namespace tandem::kvcache {

SlotStore::SlotStore(int capacity, KvTier tier, Start start)
    : capacity_(capacity), tier_(tier), free_(capacity), lru_(capacity) {
  TANDEM_CHECK(capacity >= 0);
  if (start == Start::kAllFree) {
    for (int slot = 0; slot < capacity; ++slot) free_.pushBack(slot);
  }
}

std::optional<int> SlotStore::find(BlockHash hash) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tandem::kvcache
