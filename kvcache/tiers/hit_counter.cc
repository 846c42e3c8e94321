#include "kvcache/tiers/hit_counter.h"

#include "common/status.h"

namespace tandem::kvcache {

HitCounter::HitCounter(size_t slots) : table_(slots) { TANDEM_CHECK(slots > 0); }

int HitCounter::offer(BlockHash hash) {
  // block hashes are XXH3 outputs: their low bits are already uniform.
  Entry& e = table_[hash % table_.size()];
  if (e.hash != hash || e.count == 0) e = {hash, 0};
  if (e.count < (1 << 30)) ++e.count;
  return e.count;
}

}  // namespace tandem::kvcache
