#include "kernels/moe_routing.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"

namespace tandem::kernels {

void routeTopK(const float* logits, int64_t rows, int experts, int k, bool normalize, int32_t* ids,
               float* weights) {
  TANDEM_CHECK(k >= 1 && k <= experts);
  std::vector<float> p(experts);
  std::vector<int32_t> rank(experts);
  for (int64_t t = 0; t < rows; ++t) {
    const float* l = logits + t * experts;
    const float max = *std::max_element(l, l + experts);
    double sum = 0.0;
    for (int e = 0; e < experts; ++e) {
      p[e] = std::exp(l[e] - max);
      sum += p[e];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int e = 0; e < experts; ++e) p[e] *= inv;
    for (int e = 0; e < experts; ++e) rank[e] = e;
    std::partial_sort(rank.begin(), rank.begin() + k, rank.end(),
                      [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    double chosen = 0.0;
    for (int j = 0; j < k; ++j) chosen += p[rank[j]];
    const float denom = std::max(static_cast<float>(chosen), 6.103515625e-5f);
    for (int j = 0; j < k; ++j) {
      ids[t * k + j] = rank[j];
      weights[t * k + j] = normalize ? p[rank[j]] / denom : p[rank[j]];
    }
  }
}

ExpertGroups groupByExpert(const int32_t* ids, int64_t rows, int k, int experts) {
  ExpertGroups g;
  const int64_t n = rows * k;
  g.offsets.assign(experts + 1, 0);
  for (int64_t c = 0; c < n; ++c) {
    TANDEM_CHECK(ids[c] >= 0 && ids[c] < experts);
    ++g.offsets[ids[c] + 1];
  }
  for (int e = 0; e < experts; ++e) {
    if (g.offsets[e + 1] > 0) g.active.push_back(e);
    g.offsets[e + 1] += g.offsets[e];
  }
  g.order.resize(n);
  g.position.resize(n);
  std::vector<int32_t> next(g.offsets.begin(), g.offsets.end() - 1);
  for (int64_t c = 0; c < n; ++c) {
    const int32_t p = next[ids[c]]++;
    g.order[p] = static_cast<int32_t>(c);
    g.position[c] = p;
  }
  return g;
}

}  // namespace tandem::kernels
