// `--policy dynamo`: Dynamo's KV router cost function, kept for comparison
// (docs: "KV Cache Routing", cost = overlap_score_weight x prefill blocks +
// decode blocks): prefill blocks = the queued prefill work in blocks + the
// prompt's blocks less the overlap, a device hit credited 1.0, host 0.75,
// disk 0.25; decode blocks = the active blocks + the prompt's. The least
// cost wins (ties at random), or a softmax sample with a temperature.
#pragma once

#include "router/cluster/routing_policy.h"

namespace tandem::router::cluster {

class DynamoPolicy final : public CostPolicy {
 public:
  using CostPolicy::CostPolicy;

  std::string_view name() const override { return "dynamo"; }
  double cost(const RouteAsk& ask, const RouteCandidate& c) const override;
};

}  // namespace tandem::router::cluster
