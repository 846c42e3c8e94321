// `load`: reacts to saturation, one worker at a time per role (Dynamo's
// load planner, llm-d's workload-variant autoscaler). Decode: +1 when the
// decode workers' KV utilization >= kv_utilization_threshold (0.8) or the
// requests waiting per decode worker >= queue_threshold (5); -1 when N-1
// workers would keep spare room (their utilization and queue, scaled by
// N/(N-1), below 3/4 of the thresholds) for scale_down_after intervals.
// Prefill: the same on the prompt tokens queued per prefill worker, the
// threshold being queue_threshold prompts of the mean length.
#pragma once

#include "planner/policies.h"
#include "planner/scaling_policy.h"

namespace tandem::planner {

class LoadPolicy : public ScalingPolicy {
 public:
  explicit LoadPolicy(const PolicyConfig& config) : config_(config) {}

  // ScalingPolicy
  const char* name() const override { return "load"; }
  ScalingDecision decide(const PolicyInputs& inputs) override;

 private:
  const PolicyConfig config_;
  RoleCounts down_streak_;  // intervals in a row that could lose a worker
};

}  // namespace tandem::planner
