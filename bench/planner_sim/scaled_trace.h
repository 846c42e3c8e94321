// A trace brought to cluster scale for the planner simulator: `replicas`
// copies of it overlaid (each copy's arrivals moved later by a uniform jitter
// in [0, 2 x jitter_s), those past the trace's last arrival wrapped to its
// start, so the copies' bursts do not coincide, the trace's shape over
// minutes is kept and its first minutes do not ramp up from a fraction of
// the rate (a cluster sized for the start would otherwise face a ramp the
// trace does not have); each copy's block hashes remapped so
// copies share no prefix, as independent users would not), then replayed
// `speedup` times faster. Arrivals stay sorted and start at 0.
#pragma once

#include <cstdint>

#include "bench/router_sim/sim_trace.h"

namespace tandem::bench {

struct TraceScale {
  int replicas = 1;
  double jitter_s = 60;
  double speedup = 1;
  uint64_t seed = 0;
};

SimTrace scaleTrace(const SimTrace& trace, const TraceScale& scale);

}  // namespace tandem::bench
