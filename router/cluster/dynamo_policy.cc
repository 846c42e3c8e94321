#include "router/cluster/dynamo_policy.h"

#include <algorithm>

namespace tandem::router::cluster {

double DynamoPolicy::cost(const RouteAsk& ask, const RouteCandidate& c) const {
  const double bs = std::max(1, ask.block_size);
  const double overlap = 1.0 * c.cached.device + 0.75 * (c.cached.host - c.cached.device) +
                         0.25 * (c.cached.any - c.cached.host);
  const double prompt_blocks = static_cast<double>(ask.prompt_tokens) / bs;
  const double prefill_blocks =
      c.load.queued_prefill_tokens / bs + std::max(0.0, prompt_blocks - overlap);
  const double decode_blocks = static_cast<double>(c.load.active_blocks) + prompt_blocks;
  return costs_.overlap_weight * prefill_blocks + decode_blocks;
}

}  // namespace tandem::router::cluster
