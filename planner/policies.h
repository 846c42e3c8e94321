// The scaling policies by name (`--policy`): "sla" (sla_policy.h: sizes
// prefill and decode from the predicted traffic and the worker profile to
// meet the TTFT and ITL SLOs), "load" (load_policy.h: +1 / -1 on saturation
// signals, Dynamo's load planner and llm-d's thresholds) and "static"
// (static_policy.h: fixed counts; the simulator's baseline).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/planner_types.h"
#include "planner/profile.h"
#include "planner/scaling_policy.h"

namespace tandem::planner {

struct PolicyConfig {
  double ttft_slo_ms = 500;
  double itl_slo_ms = 50;
  double interval_s = 10;  // between decisions
  // the workers' measured performance: `sla` needs it.
  std::optional<WorkerProfile> profile;
  // `sla`: the share of requests that should meet each SLO.
  double target_attainment = 0.99;
  // `sla` and `load`: a lower count is taken only after this many intervals
  // in a row wanted it (hysteresis against scaling down into a dip); `sla`
  // waits at least a cold start and an interval (a worker stopped and asked
  // for again within that costs more than one kept).
  int scale_down_after = 3;
  // `sla`: from a scale-up decision to the worker taking requests, until
  // the policy has seen its own workers arrive (it learns it from them).
  double cold_start_s = 30;
  // `sla`, provisioning against bursts (sla_policy.h, demand_history.h):
  // the rate to carry is the last interval's busiest plus this quantile of
  // the rises seen within a cold start and an interval over the last
  // burst_window_s (at most the most seen). Chosen by cross-validation over
  // eight traces (bench/RESULTS.md, "Autoscaling on traffic it was not tuned on").
  double burst_quantile = 1;
  double burst_window_s = 1200;
  // `load`: saturation thresholds (llm-d's workload-variant autoscaler):
  // decode KV utilization, requests waiting per decode worker, and prompts
  // (of the mean length) waiting per prefill worker.
  double kv_utilization_threshold = 0.8;
  double queue_threshold = 5;
  // `static`: the counts it always answers.
  RoleCounts static_counts{1, 1};
};

// InvalidArgument for an unknown name, for `sla` without a profile, or for
// SLOs or an interval that are not positive.
absl::StatusOr<std::unique_ptr<ScalingPolicy>> makePolicy(std::string_view name, const PolicyConfig& config);

// the names makePolicy knows, for a flag's check.
const std::vector<std::string>& policyNames();

// `counts` within `bounds`: each role within its min and max, then the
// total within max_total (the role above its share gives back first).
RoleCounts clampToBounds(RoleCounts counts, const ScalingBounds& bounds);

}  // namespace tandem::planner
