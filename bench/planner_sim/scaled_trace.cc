#include "bench/planner_sim/scaled_trace.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_format.h"

namespace tandem::bench {

SimTrace scaleTrace(const SimTrace& trace, const TraceScale& scale) {
  SimTrace out;
  out.name = trace.name;
  const int replicas = std::max(1, scale.replicas);
  const double speedup = scale.speedup > 0 ? scale.speedup : 1;
  if (replicas > 1 || speedup != 1) {
    out.name += absl::StrFormat(" x%d replicas, speedup %g", replicas, speedup);
  }
  std::mt19937_64 rng(scale.seed * 7919 + 17);
  // every copy moves by [0, 2 x jitter): none piles up at the start.
  std::uniform_real_distribution<double> jitter(0, 2 * scale.jitter_s);
  out.requests.reserve(trace.requests.size() * replicas);
  for (int k = 0; k < replicas; ++k) {
    // an odd multiplier keeps distinct hashes distinct within the copy.
    const uint64_t salt = static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15ull;
    for (const SimRequest& r : trace.requests) {
      SimRequest q = r;
      if (replicas > 1) q.arrival_s = r.arrival_s + jitter(rng);
      if (k > 0) {
        for (kvcache::BlockHash& h : q.hashes) h ^= salt;
      }
      out.requests.push_back(std::move(q));
    }
  }
  std::stable_sort(out.requests.begin(), out.requests.end(),
                   [](const SimRequest& a, const SimRequest& b) { return a.arrival_s < b.arrival_s; });
  const double t0 = out.requests.empty() ? 0 : out.requests.front().arrival_s;
  for (SimRequest& r : out.requests) r.arrival_s = (r.arrival_s - t0) / speedup;
  out.distinct_blocks = trace.distinct_blocks * replicas;
  return out;
}

}  // namespace tandem::bench
