#include "planner/load_policy.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace tandem::planner {

ScalingDecision LoadPolicy::decide(const PolicyInputs& in) {
  const LoadSample& o = in.observed;
  RoleCounts desired = in.current;
  std::string reason;
  // how much of each threshold the role uses now: >= 1 saturated.
  const double isl = std::max(1.0, o.mean_input_tokens);
  const double prefill_use = o.prefill_queue_tokens / (config_.queue_threshold * isl);
  const double decode_use = std::max(o.decode_kv_utilization / config_.kv_utilization_threshold,
                                     o.decode_queue_requests / config_.queue_threshold);
  const double use[2] = {prefill_use, decode_use};
  for (Role r : {Role::kPrefill, Role::kDecode}) {
    const int n = in.current[r];
    const double u = use[r == Role::kPrefill ? 0 : 1];
    if (n == 0 || u >= 1) {
      // saturated, or none at all while traffic comes.
      if (n == 0 && o.request_rate <= 0 && u < 1) continue;
      desired[r] = n + 1;
      down_streak_[r] = 0;
      absl::StrAppendFormat(&reason, "%s saturated (%.2f of threshold): +1; ", roleName(r), u);
    } else if (n > 1 && u * n / (n - 1) < 0.75) {
      if (++down_streak_[r] >= config_.scale_down_after) {
        desired[r] = n - 1;
        down_streak_[r] = 0;
        absl::StrAppendFormat(&reason, "%s has spare room at N-1 (%.2f of threshold): -1; ", roleName(r),
                              u * n / (n - 1));
      }
    } else {
      down_streak_[r] = 0;
    }
  }
  if (reason.empty()) reason = absl::StrFormat("hold (prefill %.2f, decode %.2f of threshold)", prefill_use, decode_use);
  return {clampToBounds(desired, in.bounds), reason};
}

}  // namespace tandem::planner
