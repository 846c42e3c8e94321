// A running planner, as `tandem planner run` and `tandem serve --autoscale`
// assemble it: the router's /metrics as the source, the predictor and
// policy the flags name (planner::resolvePredictor/resolvePolicy), the
// loop over a connector, and the planner's own /metrics port.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cli/planner_flags.h"
#include "common/http/http_server.h"
#include "planner/connector.h"
#include "planner/planner_loop.h"
#include "planner/planner_metrics.h"
#include "planner/router_metrics_source.h"

namespace tandem::cli {

class PlannerRuntime {
 public:
  // starts the loop (first decision after one interval) over `connector`,
  // which must outlive the runtime. Errors: bad flags (InvalidArgument),
  // an unknown policy or predictor, the metrics port not bindable.
  static absl::StatusOr<std::unique_ptr<PlannerRuntime>> start(const PlannerFlags& flags,
                                                               const std::string& router_metrics_url,
                                                               planner::Connector* connector);
  ~PlannerRuntime();

  // stops the loop (a decision in progress ends first) and the metrics port.
  void stop();
  // the planner's bound /metrics port, -1 without one.
  int metricsPort() const { return http_ != nullptr ? http_->port() : -1; }

 private:
  PlannerRuntime() = default;

  std::unique_ptr<planner::RouterMetricsSource> source_;
  std::unique_ptr<planner::LoadPredictor> predictor_;
  std::unique_ptr<planner::ScalingPolicy> policy_;
  planner::PlannerMetrics metrics_;
  std::unique_ptr<planner::PlannerLoop> loop_;
  http::HttpServerPtr http_;
};

}  // namespace tandem::cli
