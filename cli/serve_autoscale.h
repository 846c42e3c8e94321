// `tandem serve --autoscale`: the planner inside the serve process, over
// the local connector on the serve's own supervisor. The workers are the
// connector's from the start (it starts the initial ones, adds and drains
// them as the planner decides); the planner reads the router's /metrics.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "cli/planner_flags.h"
#include "cli/planner_runtime.h"
#include "common/process/supervisor.h"
#include "planner/local_connector.h"

namespace tandem::cli {

struct ServeClusterConfig;

class ServeAutoscaler {
 public:
  // starts the initial workers (the serve's --prefill-workers and
  // --decode-workers, within the bounds) on `supervisor`, registering with
  // the router's internal port, and the planner over the router's HTTP port.
  static absl::StatusOr<std::unique_ptr<ServeAutoscaler>> start(const ServeClusterConfig& config,
                                                                process::Supervisor* supervisor,
                                                                int router_internal_port, int router_http_port);
  // stops the planner (no decision after it returns); the workers stay
  // (the serve stops them after the router drained).
  void stopPlanner();

 private:
  ServeAutoscaler() = default;
  std::unique_ptr<planner::LocalConnector> connector_;
  std::unique_ptr<PlannerRuntime> runtime_;
};

}  // namespace tandem::cli
