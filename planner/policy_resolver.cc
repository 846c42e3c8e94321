#include "planner/policy_resolver.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "planner/policies.h"
#include "planner/predictors.h"
#include "planner/profile.h"

namespace tandem::planner {

absl::StatusOr<std::unique_ptr<ScalingPolicy>> resolvePolicy(const std::string& name,
                                                             const PolicySettings& settings) {
  // `static` is the simulator's baseline: a live planner has nothing to decide with it.
  if (name != "sla" && name != "load") {
    return absl::InvalidArgumentError(absl::StrCat("unknown --policy '", name, "' (sla | load)"));
  }
  PolicyConfig config;
  config.ttft_slo_ms = settings.ttft_slo_ms;
  config.itl_slo_ms = settings.itl_slo_ms;
  config.interval_s = settings.interval_s;
  if (name == "sla") {
    if (settings.profile_path.empty()) {
      return absl::InvalidArgumentError("--policy sla needs a worker profile (--profile FILE; planner/profiles/)");
    }
    absl::StatusOr<WorkerProfile> profile = WorkerProfile::load(settings.profile_path);
    if (!profile.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--profile ", settings.profile_path, ": ", profile.status().message()));
    }
    config.profile = *std::move(profile);
  }
  return makePolicy(name, config);
}

absl::StatusOr<std::unique_ptr<LoadPredictor>> resolvePredictor(const std::string& name) {
  std::unique_ptr<LoadPredictor> predictor = makePredictor(name);
  if (predictor == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown --predictor '", name, "' (", absl::StrJoin(predictorNames(), " | "), ")"));
  }
  return predictor;
}

}  // namespace tandem::planner
