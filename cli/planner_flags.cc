#include "cli/planner_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cli/default_model.h"
#include "planner/planner_loop.h"

namespace tandem::cli {

void addPlannerFlags(CLI::App* cmd, PlannerFlags* f, const std::string& prefix) {
  const std::string p = "--" + prefix;
  cmd->add_option(p + "policy", f->policy, "scaling policy: sla | load")->capture_default_str();
  cmd->add_option(p + "predictor", f->predictor, "load predictor of the next interval: constant | moving-average | holt-winters")->capture_default_str();
  cmd->add_option(p + "profile", f->profile,
                  "the sla policy's worker profile (JSON of `tandem planner profile`; default: the shipped "
                  "planner/profiles/mi300x-llama3-8b.json; on this CPU: planner/profiles/cpu-stories260k.json)");
  cmd->add_option(p + "ttft-slo-ms", f->ttft_slo_ms, "time-to-first-token SLO (ms)")->capture_default_str();
  cmd->add_option(p + "itl-slo-ms", f->itl_slo_ms, "inter-token latency SLO (ms)")->capture_default_str();
  cmd->add_option(p + "interval", f->interval, "how often the planner decides (10s, 500ms, ...)")
      ->capture_default_str();
  cmd->add_option(p + "metrics-port", f->metrics_port,
                  "HTTP port of the planner's /metrics (0 = any free, -1 = none)")->capture_default_str();
  cmd->add_option(p + "metrics-host", f->metrics_host, "address of the planner's /metrics")->capture_default_str();
  cmd->add_option("--min-prefill", f->min_prefill, "fewest prefill workers")->capture_default_str();
  cmd->add_option("--max-prefill", f->max_prefill, "most prefill workers")->capture_default_str();
  cmd->add_option("--min-decode", f->min_decode, "fewest decode workers")->capture_default_str();
  cmd->add_option("--max-decode", f->max_decode, "most decode workers")->capture_default_str();
  cmd->add_option("--max-total", f->max_total, "most workers in all")->capture_default_str();
}

absl::StatusOr<std::chrono::milliseconds> parseInterval(const std::string& text) {
  absl::string_view t = absl::StripAsciiWhitespace(text);
  double scale = 1000;
  if (absl::ConsumeSuffix(&t, "ms")) {
    scale = 1;
  } else if (absl::ConsumeSuffix(&t, "s")) {
    scale = 1000;
  } else if (absl::ConsumeSuffix(&t, "m")) {
    scale = 60000;
  }
  double value;
  if (!absl::SimpleAtod(t, &value) || !(value > 0)) {
    return absl::InvalidArgumentError(absl::StrCat("bad interval '", text, "' (e.g. 10s, 500ms, 2m)"));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(value * scale + 0.5));
}

absl::StatusOr<planner::ScalingBounds> plannerBounds(const PlannerFlags& f) {
  planner::ScalingBounds bounds{.min = {f.min_prefill, f.min_decode},
                                .max = {f.max_prefill, f.max_decode},
                                .max_total = f.max_total};
  absl::Status status = planner::validateBounds(bounds);
  if (!status.ok()) return status;
  return bounds;
}

planner::PolicySettings policySettings(const PlannerFlags& f) {
  planner::PolicySettings s;
  s.ttft_slo_ms = f.ttft_slo_ms;
  s.itl_slo_ms = f.itl_slo_ms;
  if (absl::StatusOr<std::chrono::milliseconds> interval = parseInterval(f.interval); interval.ok()) {
    s.interval_s = std::chrono::duration<double>(*interval).count();
  }
  s.profile_path = f.profile.empty() ? shippedFilePath("planner/profiles/mi300x-llama3-8b.json") : f.profile;
  return s;
}

}  // namespace tandem::cli
