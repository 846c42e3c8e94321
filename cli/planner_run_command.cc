// `tandem planner run`: the autoscaling planner beside a running router.
// Every --interval it reads the router's /metrics (the router aggregates its
// workers' load), predicts the next interval, decides the prefill and
// decode worker counts (--policy) within the bounds, and applies them
// through --connector: `local` starts and drains `tandem worker` processes
// here, `kubernetes` scales the two Deployments through the API server's
// scale subresource, `dry-run` only logs. SIGINT/SIGTERM stop it (a local
// connector's workers are stopped with it).
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/planner_flags.h"
#include "cli/planner_runtime.h"
#include "cli/stop_signals.h"
#include "common/process/supervisor.h"
#include "common/status.h"
#include "planner/dry_run_connector.h"
#include "planner/http_client.h"
#include "planner/kube_config.h"
#include "planner/kubernetes_connector.h"
#include "planner/load_sampler.h"
#include "planner/local_connector.h"
#include "planner/planner_loop.h"
#include "common/prometheus_text.h"

namespace tandem::cli {
namespace {

struct PlannerRunArgs {
  std::string router;  // http://HOST:PORT of the router's HTTP port
  std::string connector = "dry-run";
  PlannerFlags planner;
  // kubernetes
  std::string kubeconfig;
  std::string kube_context;
  std::string namespace_;
  std::string prefill_deployment;
  std::string decode_deployment;
  // local
  std::string registry;  // the router's internal HOST:PORT
  std::string model;
  std::string worker_args;
  double drain_timeout_s = 30;
};

std::string metricsUrl(std::string router) {
  while (absl::EndsWith(router, "/")) router.pop_back();
  return absl::EndsWith(router, "/metrics") ? router : router + "/metrics";
}

// the ready workers the router reports now: where a dry run starts from.
planner::RoleCounts readyWorkers(const std::string& url, const planner::RoleCounts& fallback) {
  absl::StatusOr<planner::HttpReply> reply = planner::httpCall({.url = url});
  if (!reply.ok() || reply->status != 200) return fallback;
  absl::StatusOr<MetricsSnapshot> m = MetricsSnapshot::parse(reply->body);
  if (!m.ok()) return fallback;
  absl::StatusOr<planner::LoadSample> now = planner::loadBetween(*m, *m, 0, 1, {});
  return now.ok() ? now->ready : fallback;
}

absl::StatusOr<std::unique_ptr<planner::Connector>> makeConnector(const PlannerRunArgs& args,
                                                                  const planner::ScalingBounds& bounds) {
  if (args.connector == "dry-run") {
    const planner::RoleCounts start = readyWorkers(metricsUrl(args.router), bounds.min);
    return std::unique_ptr<planner::Connector>(std::make_unique<planner::DryRunConnector>(start));
  }
  if (args.connector == "kubernetes") {
    planner::KubernetesConnectorOptions options;
    if (!args.kubeconfig.empty()) {
      ASSIGN_OR_RETURN(options.api, planner::kubeconfigFile(args.kubeconfig, args.kube_context));
    } else {
      ASSIGN_OR_RETURN(options.api, planner::inClusterConfig());
    }
    options.namespace_ = args.namespace_;
    options.prefill_deployment = args.prefill_deployment;
    options.decode_deployment = args.decode_deployment;
    ASSIGN_OR_RETURN(auto connector, planner::KubernetesConnector::create(std::move(options)));
    return std::unique_ptr<planner::Connector>(std::move(connector));
  }
  // local
  if (args.registry.empty()) {
    return absl::InvalidArgumentError(
        "--connector local needs --registry HOST:PORT (the router's --internal-port the workers register with)");
  }
  planner::LocalConnectorOptions options;
  ASSIGN_OR_RETURN(options.tandem_binary, process::selfExecutable());
  options.router_address = args.registry;
  options.model = args.model.empty() ? defaultModelPath() : args.model;
  for (absl::string_view word : absl::StrSplit(args.worker_args, ' ', absl::SkipEmpty())) {
    options.worker_flags.emplace_back(word);
  }
  options.drain_timeout = std::chrono::milliseconds(static_cast<int64_t>(args.drain_timeout_s * 1000));
  // the workers inherit this process's environment: $TANDEM_CLUSTER_SECRET among it.
  ASSIGN_OR_RETURN(auto connector, planner::LocalConnector::create(std::move(options)));
  // the minima from the start.
  for (planner::Role role : {planner::Role::kPrefill, planner::Role::kDecode}) {
    RETURN_IF_ERROR(connector->scale(role, bounds.min[role]));
  }
  return std::unique_ptr<planner::Connector>(std::move(connector));
}

absl::Status runPlanner(const PlannerRunArgs& args) {
  if (args.router.empty()) return absl::InvalidArgumentError("--router URL (the router's HTTP address) is required");
  ASSIGN_OR_RETURN(planner::ScalingBounds bounds, plannerBounds(args.planner));
  const sigset_t stop_signals = blockStopSignals();
  ASSIGN_OR_RETURN(std::unique_ptr<planner::Connector> connector, makeConnector(args, bounds));
  ASSIGN_OR_RETURN(std::unique_ptr<PlannerRuntime> runtime,
                   PlannerRuntime::start(args.planner, metricsUrl(args.router), connector.get()));
  const int sig = waitForStopSignal(stop_signals);
  std::fprintf(stderr, "tandem planner: %s, stopping\n", stopSignalName(sig));
  runtime->stop();
  connector.reset();
  std::fprintf(stderr, "tandem planner: stopped\n");
  return absl::OkStatus();
}

}  // namespace

void registerPlannerRunCommand(CLI::App* planner) {
  auto args = std::make_shared<PlannerRunArgs>();
  CLI::App* cmd = planner->add_subcommand(
      "run", "scale prefill and decode workers to the load a router sees (local processes, Kubernetes, dry run)");
  cmd->add_option("--router", args->router, "the router's HTTP address (its /metrics), e.g. http://127.0.0.1:8000")
      ->required();
  cmd->add_option("--connector", args->connector, "local | kubernetes | dry-run")
      ->check(CLI::IsMember({"local", "kubernetes", "dry-run"}))
      ->capture_default_str();
  addPlannerFlags(cmd, &args->planner, "");
  cmd->add_option("--kubeconfig", args->kubeconfig,
                  "kubernetes: a kubeconfig file (default: the pod's service account, in-cluster)");
  cmd->add_option("--kube-context", args->kube_context, "kubernetes: the kubeconfig context (default: current)");
  cmd->add_option("--namespace", args->namespace_, "kubernetes: the Deployments' namespace (default: the pod's)");
  cmd->add_option("--prefill-deployment", args->prefill_deployment,
                  "kubernetes: the prefill workers' Deployment (none: no prefill scaling)");
  cmd->add_option("--decode-deployment", args->decode_deployment, "kubernetes: the decode workers' Deployment");
  cmd->add_option("--registry", args->registry,
                  "local: the router's internal HOST:PORT (--internal-port) new workers register with");
  cmd->add_option("--model", args->model, "local: the workers' model (default: the embedded stories260K)");
  cmd->add_option("--worker-args", args->worker_args,
                  "local: further `tandem worker` flags, space-separated (e.g. \"--threads 1\")");
  cmd->add_option("--drain-timeout", args->drain_timeout_s,
                  "local: seconds a worker being removed may take to finish its requests")
      ->capture_default_str();
  setAction(cmd, [args] { return runPlanner(*args); });
}

}  // namespace tandem::cli
