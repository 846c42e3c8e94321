#include "server/worker/expert_load.h"

#include <algorithm>
#include <cmath>

namespace tandem::worker {

ExpertLoad summarizeExpertLoad(const std::vector<int64_t>& counts, int experts) {
  ExpertLoad out;
  if (experts <= 0) return out;
  std::vector<double> ratios;
  for (size_t l = 0; l + experts <= counts.size(); l += experts) {
    int64_t layer_total = 0;
    for (int e = 0; e < experts; ++e) {
      layer_total += counts[l + e];
      if (counts[l + e] == 0) ++out.idle;
    }
    out.routed += layer_total;
    if (layer_total == 0) continue;
    const double mean = static_cast<double>(layer_total) / experts;
    for (int e = 0; e < experts; ++e) ratios.push_back(counts[l + e] / mean);
  }
  if (ratios.empty()) return out;
  std::sort(ratios.begin(), ratios.end());
  for (int q = 0; q < 5; ++q) {
    // nearest rank
    const size_t i = static_cast<size_t>(std::ceil(ExpertLoad::kQuantiles[q] * ratios.size()));
    out.ratio[q] = ratios[std::min(ratios.size() - 1, i == 0 ? 0 : i - 1)];
  }
  return out;
}

}  // namespace tandem::worker
