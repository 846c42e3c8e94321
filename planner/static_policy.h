// `static`: the same counts every interval (the simulator sizes them for the
// trace's peak): the baseline an autoscaler must beat on GPU time.
#pragma once

#include "planner/policies.h"
#include "planner/scaling_policy.h"

namespace tandem::planner {

class StaticPolicy : public ScalingPolicy {
 public:
  explicit StaticPolicy(RoleCounts counts) : counts_(counts) {}

  // ScalingPolicy
  const char* name() const override { return "static"; }
  ScalingDecision decide(const PolicyInputs& inputs) override {
    return {clampToBounds(counts_, inputs.bounds), "static"};
  }

 private:
  const RoleCounts counts_;
};

}  // namespace tandem::planner
