#include "common/backoff.h"

#include <algorithm>

namespace tandem {

Backoff::Backoff(Duration initial, Duration max, uint64_t seed)
    : initial_(std::max(initial, Duration(1))),
      max_(std::max(max, initial_)),
      bound_(initial_),
      rng_(seed != 0 ? seed : std::random_device{}()) {}

Backoff::Duration Backoff::next() {
  const int64_t hi = bound_.count();
  std::uniform_int_distribution<int64_t> draw(hi / 2, hi);
  const Duration delay(draw(rng_));
  bound_ = std::min(bound_ * 2, max_);
  return delay;
}

}  // namespace tandem
