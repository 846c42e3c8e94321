// Counts how often each block hash was offered, in a bounded direct-mapped
// table (no allocation after construction): a hash whose slot is taken by
// another hash starts again at one. The disk tier's admission (min_hits)
// asks it; a rarely seen hash losing its count only delays its admission.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kvcache/prefix_hash.h"

namespace tandem::kvcache {

class HitCounter {
 public:
  explicit HitCounter(size_t slots);
  // counts one more offer of `hash`; returns its count, this one included.
  int offer(BlockHash hash);

 private:
  struct Entry {
    BlockHash hash = 0;
    int count = 0;
  };
  std::vector<Entry> table_;
};

}  // namespace tandem::kvcache
