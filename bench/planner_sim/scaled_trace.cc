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
  // every copy's arrivals move by [0, 2 x jitter) and those moved past the
  // trace's end wrap to its start (the copy loops over the trace's span):
  // none piles up at the start, and the start and end do not ramp.
  std::uniform_real_distribution<double> jitter(0, 2 * scale.jitter_s);
  double first = 0, span = 0;
  if (!trace.requests.empty()) {
    first = trace.requests.front().arrival_s;
    span = trace.requests.back().arrival_s - first;
  }
  out.requests.reserve(trace.requests.size() * replicas);
  for (int k = 0; k < replicas; ++k) {
    // an odd multiplier keeps distinct hashes distinct within the copy.
    const uint64_t salt = static_cast<uint64_t>(k) * 0x9E3779B97F4A7C15ull;
    for (const SimRequest& r : trace.requests) {
      SimRequest q = r;
      if (replicas > 1) {
        q.arrival_s = r.arrival_s + jitter(rng);
        if (span > 0 && q.arrival_s > first + span) q.arrival_s -= span;
      }
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
