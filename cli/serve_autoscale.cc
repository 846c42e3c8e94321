#include "cli/serve_autoscale.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "cli/serve_cluster.h"
#include "common/grpc/cluster_auth.h"
#include "common/status.h"
#include "planner/planner_loop.h"
#include "planner/policies.h"

namespace tandem::cli {
namespace {

// where this process reaches the router's HTTP port.
std::string loopbackFor(const std::string& host) {
  if (host == "0.0.0.0" || host.empty()) return "127.0.0.1";
  if (host == "::") return "[::1]";
  return host.find(':') != std::string::npos ? absl::StrCat("[", host, "]") : host;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServeAutoscaler>> ServeAutoscaler::start(const ServeClusterConfig& config,
                                                                        process::Supervisor* supervisor,
                                                                        int router_internal_port,
                                                                        int router_http_port) {
  ASSIGN_OR_RETURN(planner::ScalingBounds bounds, plannerBounds(config.planner));
  planner::LocalConnectorOptions options;
  options.tandem_binary = config.tandem_binary;
  options.router_address = absl::StrCat("127.0.0.1:", router_internal_port);
  options.model = config.model;
  options.worker_flags = config.worker_flags;
  options.env = {absl::StrCat(grpc_util::kClusterSecretEnv, "=", config.cluster_secret)};
  options.kv_disk_path = config.kv_disk_path;
  options.drain_timeout = std::chrono::milliseconds(static_cast<int64_t>(config.drain_timeout_s * 1000));
  std::unique_ptr<ServeAutoscaler> a(new ServeAutoscaler());
  ASSIGN_OR_RETURN(a->connector_, planner::LocalConnector::create(std::move(options), supervisor));
  const planner::RoleCounts initial =
      planner::clampToBounds({config.prefill_workers, config.decode_workers}, bounds);
  for (planner::Role role : {planner::Role::kPrefill, planner::Role::kDecode}) {
    RETURN_IF_ERROR(a->connector_->scale(role, initial[role]));
  }
  const std::string url =
      absl::StrCat("http://", loopbackFor(config.host), ":", router_http_port, "/metrics");
  ASSIGN_OR_RETURN(a->runtime_, PlannerRuntime::start(config.planner, url, a->connector_.get()));
  return a;
}

void ServeAutoscaler::stopPlanner() {
  if (runtime_ != nullptr) runtime_->stop();
}

}  // namespace tandem::cli
