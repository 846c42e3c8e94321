#include "router/cluster/load_policies.h"

#include <vector>

namespace tandem::router::cluster {
namespace {

// fewer running, then fewer prefill tokens queued, then more free blocks.
bool lessLoaded(const RouteCandidate& a, const RouteCandidate& b) {
  if (a.load.running != b.load.running) return a.load.running < b.load.running;
  if (a.load.queued_prefill_tokens != b.load.queued_prefill_tokens) {
    return a.load.queued_prefill_tokens < b.load.queued_prefill_tokens;
  }
  return a.free_blocks > b.free_blocks;
}

}  // namespace

size_t LeastLoadedPolicy::choose(const RouteAsk&, std::span<const RouteCandidate> candidates,
                                 std::mt19937_64& rng) {
  // the least loaded, ties at random (reservoir sampling).
  size_t best = 0;
  size_t ties = 1;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (lessLoaded(candidates[i], candidates[best])) {
      best = i;
      ties = 1;
    } else if (!lessLoaded(candidates[best], candidates[i]) &&
               std::uniform_int_distribution<size_t>(0, ties++)(rng) == 0) {
      best = i;
    }
  }
  return best;
}

size_t RoundRobinPolicy::choose(const RouteAsk&, std::span<const RouteCandidate> candidates,
                                std::mt19937_64&) {
  return next_.fetch_add(1) % candidates.size();
}

size_t RandomPolicy::choose(const RouteAsk&, std::span<const RouteCandidate> candidates,
                            std::mt19937_64& rng) {
  return std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(rng);
}

size_t PowerOfTwoPolicy::choose(const RouteAsk&, std::span<const RouteCandidate> candidates,
                                std::mt19937_64& rng) {
  if (candidates.size() == 1) return 0;
  const size_t a = std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(rng);
  size_t b = std::uniform_int_distribution<size_t>(0, candidates.size() - 2)(rng);
  if (b >= a) ++b;
  if (lessLoaded(candidates[a], candidates[b])) return a;
  if (lessLoaded(candidates[b], candidates[a])) return b;
  return std::uniform_int_distribution<int>(0, 1)(rng) == 0 ? a : b;
}

}  // namespace tandem::router::cluster
