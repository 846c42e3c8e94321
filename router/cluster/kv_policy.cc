#include "router/cluster/kv_policy.h"

#include <vector>

namespace tandem::router::cluster {

double KvPolicy::cost(const RouteAsk& ask, const RouteCandidate& c) const {
  const double decode = c.load.decode_s_per_step * static_cast<double>(c.load.running);
  return estimateTtft(ask, c, costs_) + costs_.decode_weight * decode;
}

size_t KvPolicy::choose(const RouteAsk& ask, std::span<const RouteCandidate> candidates,
                        std::mt19937_64& rng) {
  std::vector<double> costs(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) costs[i] = cost(ask, candidates[i]);
  return pickByCost(costs, costs_.temperature, rng);
}

}  // namespace tandem::router::cluster
