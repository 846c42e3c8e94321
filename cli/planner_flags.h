// The planner's flags, shared by `tandem planner run` and `tandem serve
// --autoscale`: the policy and predictor, the SLOs, the interval, the
// bounds (--min-prefill ... --max-total) and the planner's /metrics port.
// In `serve` every flag but the bounds carries a "planner-" prefix
// (--planner-policy, ...), so none reads as a router flag.
#pragma once

#include <chrono>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "planner/planner_types.h"
#include "planner/policy_resolver.h"

namespace tandem::cli {

struct PlannerFlags {
  std::string policy = "load";
  std::string predictor = "constant";
  std::string profile;  // "" = the shipped MI300X-class profile
  double ttft_slo_ms = 500;
  double itl_slo_ms = 50;
  std::string interval = "10s";
  int min_prefill = 0, max_prefill = 8;
  int min_decode = 1, max_decode = 8;
  int max_total = 16;
  std::string metrics_host = "127.0.0.1";
  int metrics_port = -1;  // -1 = no HTTP port
};

// `prefix` is "" (planner run) or "planner-" (serve).
void addPlannerFlags(CLI::App* cmd, PlannerFlags* flags, const std::string& prefix);

// "10s", "500ms", "2m" or plain seconds ("2.5"). InvalidArgument otherwise
// or when not positive.
absl::StatusOr<std::chrono::milliseconds> parseInterval(const std::string& text);

// the bounds the flags give, checked (planner::validateBounds).
absl::StatusOr<planner::ScalingBounds> plannerBounds(const PlannerFlags& flags);
planner::PolicySettings policySettings(const PlannerFlags& flags);

}  // namespace tandem::cli
