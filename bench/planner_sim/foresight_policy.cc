#include "bench/planner_sim/foresight_policy.h"

#include <algorithm>
#include <cmath>

#include "planner/policies.h"

namespace tandem::bench {

using planner::RoleCounts;

ForesightPolicy::ForesightPolicy(std::vector<planner::LoadSample> future, const planner::PolicyConfig& config,
                                 Headroom headroom)
    : future_(std::move(future)),
      interval_s_(config.interval_s),
      cold_start_s_(config.cold_start_s),
      sizing_(config),
      headroom_(headroom) {}

RoleCounts ForesightPolicy::neededFrom(double now_s) const {
  // a decision falls on an interval's start: the small slack keeps a
  // rounding error from skipping it.
  const double first = std::max(0.0, std::floor(now_s / interval_s_ + 1e-9));
  const double last = std::floor((now_s + cold_start_s_) / interval_s_ + 1e-9);
  RoleCounts most;
  for (double k = first; k <= last && k < static_cast<double>(future_.size()); ++k) {
    const RoleCounts n = sizing_.sizeForInterval(future_[static_cast<size_t>(k)]);
    most.prefill = std::max(most.prefill, static_cast<int>(std::floor(n.prefill * headroom_.prefill + 0.5)));
    most.decode = std::max(most.decode, static_cast<int>(std::floor(n.decode * headroom_.decode + 0.5)));
  }
  return most;
}

planner::ScalingDecision ForesightPolicy::decide(const planner::PolicyInputs& in) {
  return {planner::clampToBounds(neededFrom(in.observed.time_s), in.bounds), "foresight"};
}

}  // namespace tandem::bench
