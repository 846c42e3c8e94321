#include "planner/policies.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "planner/load_policy.h"
#include "planner/sla_policy.h"
#include "planner/static_policy.h"

namespace tandem::planner {

absl::StatusOr<std::unique_ptr<ScalingPolicy>> makePolicy(std::string_view name, const PolicyConfig& config) {
  if (!(config.ttft_slo_ms > 0) || !(config.itl_slo_ms > 0)) {
    return absl::InvalidArgumentError("the TTFT and ITL SLOs must be positive");
  }
  if (!(config.interval_s > 0)) return absl::InvalidArgumentError("the interval must be positive");
  if (name == "sla") {
    if (!config.profile) return absl::InvalidArgumentError("the sla policy needs a worker profile (--profile)");
    return std::unique_ptr<ScalingPolicy>(std::make_unique<SlaPolicy>(config));
  }
  if (name == "load") return std::unique_ptr<ScalingPolicy>(std::make_unique<LoadPolicy>(config));
  if (name == "static") return std::unique_ptr<ScalingPolicy>(std::make_unique<StaticPolicy>(config.static_counts));
  return absl::InvalidArgumentError(absl::StrCat("unknown scaling policy '", std::string(name), "' (sla, load, static)"));
}

const std::vector<std::string>& policyNames() {
  static const std::vector<std::string> names = {"sla", "load", "static"};
  return names;
}

RoleCounts clampToBounds(RoleCounts counts, const ScalingBounds& bounds) {
  for (Role r : {Role::kPrefill, Role::kDecode}) {
    counts[r] = std::clamp(counts[r], bounds.min[r], std::max(bounds.min[r], bounds.max[r]));
  }
  while (counts.total() > bounds.max_total) {
    // take from the role furthest above its minimum, relative to its size.
    const bool p_can = counts.prefill > bounds.min.prefill, d_can = counts.decode > bounds.min.decode;
    if (!p_can && !d_can) break;
    if (p_can && (!d_can || counts.prefill >= counts.decode)) --counts.prefill; else --counts.decode;
  }
  return counts;
}

}  // namespace tandem::planner
