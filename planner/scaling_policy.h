// Decides how many prefill and decode workers the next interval needs
// (`--policy sla|load`, and `static` for comparison in the simulator).
#pragma once

#include "planner/planner_types.h"

namespace tandem::planner {

struct PolicyInputs {
  LoadSample observed;   // the interval that just ended
  LoadSample predicted;  // what the predictor expects next
  RoleCounts current;    // workers now (ready + starting), as the connector reports
  ScalingBounds bounds;
};

class ScalingPolicy {
 public:
  virtual ~ScalingPolicy() = default;
  virtual const char* name() const = 0;
  // the desired counts, within `inputs.bounds`, and the reason.
  virtual ScalingDecision decide(const PolicyInputs& inputs) = 0;
};

}  // namespace tandem::planner
