// Exponential backoff with jitter, for anything that retries a peer: each
// next() is a delay drawn uniformly from [bound / 2, bound], where bound
// starts at `initial` and doubles after every draw up to `max`; reset()
// starts over (call it once the peer behaved for a while). The jitter keeps
// many retriers that failed together (a worker restart seen by every
// subscriber) from retrying in lockstep. Not thread-safe: one per retrier.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>

namespace tandem {

class Backoff {
 public:
  using Duration = std::chrono::milliseconds;

  // `initial` > 0 and `max` >= `initial` (a larger initial is taken as max);
  // `seed` fixes the jitter's draws (tests), 0 = a random seed.
  Backoff(Duration initial, Duration max, uint64_t seed = 0);

  // the delay before the next retry; doubles the bound for the one after.
  Duration next();
  // the bound the next draw is taken under.
  Duration bound() const { return bound_; }
  // back to `initial`.
  void reset() { bound_ = initial_; }

 private:
  const Duration initial_;
  const Duration max_;
  Duration bound_;
  std::mt19937_64 rng_;
};

}  // namespace tandem
