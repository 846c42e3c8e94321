// How a worker reports a mixture of experts' routing in a bounded number of
// series. One series per (layer, expert) would be 48 x 128 = 6144 for
// Qwen3-30B-A3B and 61 x 256 = 15616 for DeepSeek-V3, per worker: far past
// what a Prometheus server should take from one target. What an operator
// acts on (expert placement, capacity headroom, a router collapsing onto
// few experts) is the imbalance, so the worker exports, from its
// cumulative counts of tokens routed to each (layer, expert):
//  - tandem:moe_routed_tokens_total: choices made (tokens x k x layers);
//  - tandem:moe_expert_load_ratio{quantile}: over every (layer, expert),
//    its tokens over its layer's mean per expert (1 = balanced), at
//    quantiles 0, 0.5, 0.9, 0.99 and 1 (the hottest expert's load);
//  - tandem:moe_experts_idle: (layer, expert) pairs no token chose yet.
// Seven series whatever the model's size.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::worker {

struct ExpertLoad {
  int64_t routed = 0;
  static constexpr double kQuantiles[] = {0.0, 0.5, 0.9, 0.99, 1.0};
  double ratio[5] = {0, 0, 0, 0, 0};  // at kQuantiles
  int64_t idle = 0;
};

// counts: [layers * experts], layer-major. Layers that routed nothing count
// only towards idle.
ExpertLoad summarizeExpertLoad(const std::vector<int64_t>& counts, int experts);

}  // namespace tandem::worker
