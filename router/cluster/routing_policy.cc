#include "router/cluster/routing_policy.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "router/cluster/dynamo_policy.h"
#include "router/cluster/kv_policy.h"
#include "router/cluster/load_policies.h"

namespace tandem::router::cluster {

int64_t uncachedTokens(const RouteAsk& ask, const RouteCandidate& c) {
  const int64_t cached = std::min<int64_t>(static_cast<int64_t>(c.cached.any) * ask.block_size, ask.prompt_tokens);
  return ask.prompt_tokens - cached;
}

double estimateTtft(const RouteAsk& ask, const RouteCandidate& c, const RoutingCosts& costs) {
  const double rate = std::max(c.load.prefill_tokens_per_s, 1e-6);
  double t = c.load.prefill_queue_s + static_cast<double>(uncachedTokens(ask, c)) / rate;
  t += static_cast<double>(c.cached.host - c.cached.device) * costs.host_onboard_s_per_block;
  t += static_cast<double>(c.cached.any - c.cached.host) * costs.disk_onboard_s_per_block;
  t += static_cast<double>(c.transfer_blocks) * costs.transfer_s_per_block;
  // the first token is one decode step of the batch it joins.
  t += c.load.decode_s_per_step;
  return t;
}

size_t CostPolicy::choose(const RouteAsk& ask, std::span<const RouteCandidate> candidates,
                          std::mt19937_64& rng) {
  std::vector<double> costs(candidates.size());
  for (size_t i = 0; i < candidates.size(); ++i) costs[i] = cost(ask, candidates[i]);
  return pickByCost(costs, costs_.temperature, rng);
}

size_t pickByCost(std::span<const double> cost, double temperature, std::mt19937_64& rng) {
  const double lo = *std::min_element(cost.begin(), cost.end());
  if (temperature > 0 && cost.size() > 1) {
    const double hi = *std::max_element(cost.begin(), cost.end());
    const double spread = hi - lo;
    if (spread > 0) {
      std::vector<double> weights(cost.size());
      for (size_t i = 0; i < cost.size(); ++i) {
        weights[i] = std::exp(-(cost[i] - lo) / (spread * temperature));
      }
      return std::discrete_distribution<size_t>(weights.begin(), weights.end())(rng);
    }
  }
  // ties within a relative 1e-9 are ties.
  const double eps = std::abs(lo) * 1e-9 + 1e-12;
  size_t n = 0;
  size_t pick = 0;
  for (size_t i = 0; i < cost.size(); ++i) {
    if (cost[i] > lo + eps) continue;
    // reservoir sampling: each tie equally likely.
    if (std::uniform_int_distribution<size_t>(0, n)(rng) == 0) pick = i;
    ++n;
  }
  return pick;
}

const std::vector<std::string>& routingPolicyNames() {
  static const std::vector<std::string> names = {"kv", "dynamo", "least_loaded", "round_robin",
                                                 "random", "power_of_two"};
  return names;
}

absl::StatusOr<std::unique_ptr<RoutingPolicy>> makeRoutingPolicy(std::string_view name,
                                                                  const RoutingCosts& costs) {
  if (name == "kv") return std::make_unique<KvPolicy>(costs);
  if (name == "dynamo") return std::make_unique<DynamoPolicy>(costs);
  if (name == "least_loaded") return std::make_unique<LeastLoadedPolicy>();
  if (name == "round_robin") return std::make_unique<RoundRobinPolicy>();
  if (name == "random") return std::make_unique<RandomPolicy>();
  if (name == "power_of_two") return std::make_unique<PowerOfTwoPolicy>();
  return absl::InvalidArgumentError(absl::StrCat("unknown routing policy '", std::string(name), "' (known: ",
                                                 absl::StrJoin(routingPolicyNames(), ", "), ")"));
}

}  // namespace tandem::router::cluster
