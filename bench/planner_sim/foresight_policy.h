// The bound every autoscaler is judged against: a perfect-foresight policy
// that knows each interval's traffic before it comes (the simulator hands it
// the trace's intervals as a static cluster saw them: the prompts' uncached
// tokens as routed), sizes each interval exactly with the sla sizing model
// (SlaPolicy::sizeForInterval: the interval's own rate, its busiest half's
// for prefill, its own prompt-length mix and arrival scv, and at least the
// workers for the requests the static cluster held in decode in it; no
// corrections, no window, no burst envelope: nothing is uncertain), and
// still pays the
// cold start: a worker an interval needs is asked for a cold start before
// it, and one needed again within a cold start is kept (stopping and
// starting it again would cost more). The sizing model is not exact (its
// decode batch ignores how unevenly requests spread; Mooncake's decode
// misses 1.6% of ITLs at it), so the simulator calibrates the bound: each
// role's counts times a headroom (rounded), the smallest of 1, 1.05, ... 2
// for which it meets the SLO targets (planner_simulator.cc). Savings are
// read as a fraction of its own: (static - policy) / (static - bound)
// GPU-hours, `fraction_of_possible_savings`.
#pragma once

#include <vector>

#include "planner/planner_types.h"
#include "planner/scaling_policy.h"
#include "planner/sla_policy.h"

namespace tandem::bench {

struct Headroom {
  double prefill = 1, decode = 1;
};

class ForesightPolicy : public planner::ScalingPolicy {
 public:
  // `future[k]`: interval k's traffic ([k, k+1) x config.interval_s);
  // `config` as sla's (profile set); `headroom`: what each role's count is
  // multiplied by (at least 1).
  ForesightPolicy(std::vector<planner::LoadSample> future, const planner::PolicyConfig& config,
                  Headroom headroom = {});

  // the most the intervals from the one starting at `now_s` through the
  // one a worker asked for now would serve first (now + cold start) need.
  planner::RoleCounts neededFrom(double now_s) const;

  // ScalingPolicy
  const char* name() const override { return "foresight"; }
  planner::ScalingDecision decide(const planner::PolicyInputs& inputs) override;

 private:
  const std::vector<planner::LoadSample> future_;
  const double interval_s_;
  const double cold_start_s_;
  planner::SlaPolicy sizing_;
  const Headroom headroom_;
};

}  // namespace tandem::bench
