// One planner decision as JSON: the line the live loop logs every interval
// (planner_loop.h) and `tandem planner simulate --decisions` writes for
// each simulated interval, so a simulated run reads like a live one.
#pragma once

#include "nlohmann/json.hpp"
#include "planner/planner_types.h"
#include "planner/scaling_policy.h"

namespace tandem::planner {

// {"prefill": P, "decode": D}
nlohmann::json countsJson(const RoleCounts& counts);

// the sample's rates, lengths, latencies, attainment, queues and ready workers.
nlohmann::json sampleJson(const LoadSample& sample);

// {"time_s" (to the millisecond), "policy"}: what every line starts with,
// a decision or the error that kept one from being made.
nlohmann::json decisionHeader(double time_s, const char* policy);

// the header and {"observed", "predicted", "current", "desired",
//  "reason"}, and "policy_asked" where the bounds changed what the policy
// asked for (`desired` is what was applied).
nlohmann::json decisionJson(double time_s, const char* policy, const PolicyInputs& inputs,
                            const ScalingDecision& decision, const RoleCounts& desired);

}  // namespace tandem::planner
