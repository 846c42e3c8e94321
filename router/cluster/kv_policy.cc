#include "router/cluster/kv_policy.h"


namespace tandem::router::cluster {

double KvPolicy::cost(const RouteAsk& ask, const RouteCandidate& c) const {
  const double decode = c.load.decode_s_per_step * static_cast<double>(c.load.running);
  return estimateTtft(ask, c, costs_) + costs_.decode_weight * decode;
}

}  // namespace tandem::router::cluster
