// `--policy kv`: the candidate with the least predicted time to first token
// (estimateTtft: its queued prefill work and this prompt's uncached tokens
// at its learned rate, onboarding of host/disk hits, KV transfer) plus
// decode_weight x the decode time its running batch costs (a step per
// running request). Because the queue counts, a hot prefix spreads to more
// workers as its holders' predicted TTFT rises, and a stalled worker (its
// learned rate falls) is avoided. Ties at random; with a temperature,
// softmax sampling (routing_policy.h pickByCost).
#pragma once

#include "router/cluster/routing_policy.h"

namespace tandem::router::cluster {

class KvPolicy final : public CostPolicy {
 public:
  using CostPolicy::CostPolicy;

  std::string_view name() const override { return "kv"; }
  // the cost it minimises, in seconds.
  double cost(const RouteAsk& ask, const RouteCandidate& c) const override;
};

}  // namespace tandem::router::cluster
