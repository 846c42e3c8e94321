// Where the planner's loop gets each interval's load: the router's
// /metrics (RouterMetricsSource), or anything a test or the simulator
// supplies.
#pragma once

#include "absl/status/statusor.h"
#include "planner/planner_types.h"

namespace tandem::planner {

class MetricsSource {
 public:
  virtual ~MetricsSource() = default;
  // the load since the previous call, ending now (`now_s`: seconds since
  // the planner started). An error means no sample this interval (the
  // loop decides nothing, logs and counts it): Unavailable when the
  // source cannot be read, FailedPrecondition when the interval cannot be
  // measured (first call, a restart of the source, a stale baseline).
  virtual absl::StatusOr<LoadSample> next(double now_s) = 0;
};

}  // namespace tandem::planner
