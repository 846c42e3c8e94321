// The one place `tandem planner run` and `tandem serve --autoscale` turn
// --policy and --predictor names into objects. The policies and predictors
// themselves (sla, load, static; constant, moving average, Holt-Winters)
// are planner/policies.h and planner/predictors.h; until those are linked
// here, this file carries a stand-in for `load` (llm-d-style saturation,
// ±1 worker per role per interval) and `constant`.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "planner/load_predictor.h"
#include "planner/scaling_policy.h"

namespace tandem::planner {

struct PolicySettings {
  double ttft_slo_ms = 500;
  double itl_slo_ms = 50;
  std::string profile_path;  // the `sla` policy's performance profile ("" = the shipped default)
  // the stand-in `load` policy's thresholds: a role scales up when a worker
  // of it has this many requests waiting (decode) / prompt tokens queued
  // (prefill) or KV this full, and down when one fewer worker would stay
  // below half of them.
  double decode_queue_threshold = 5;
  double prefill_queue_threshold_tokens = 4096;
  double kv_utilization_threshold = 0.8;
};

// InvalidArgument naming the choices for an unknown name.
absl::StatusOr<std::unique_ptr<ScalingPolicy>> resolvePolicy(const std::string& name,
                                                             const PolicySettings& settings);
absl::StatusOr<std::unique_ptr<LoadPredictor>> resolvePredictor(const std::string& name);

}  // namespace tandem::planner
