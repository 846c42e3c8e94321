// The one place `tandem planner run` and `tandem serve --autoscale` turn
// --policy and --predictor names into objects: the policies of
// planner/policies.h (sla, load) and the predictors of planner/predictors.h
// (constant, moving-average, holt-winters).
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
  double interval_s = 10;
  // the `sla` policy's worker profile (planner/profiles/*.json); required
  // for sla, ignored by load.
  std::string profile_path;
};

// InvalidArgument naming the choices for an unknown name (or sla without a
// readable profile).
absl::StatusOr<std::unique_ptr<ScalingPolicy>> resolvePolicy(const std::string& name,
                                                             const PolicySettings& settings);
absl::StatusOr<std::unique_ptr<LoadPredictor>> resolvePredictor(const std::string& name);

}  // namespace tandem::planner
