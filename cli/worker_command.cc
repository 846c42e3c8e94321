// `tandem worker --role prefill|decode|both --model PATH --listen HOST:PORT`:
// one worker process of a disaggregated deployment (DESIGN.md §1). It
// serves tandem.v1.Worker over gRPC, /metrics over HTTP, and (with
// --router) registers with the router. SIGINT or SIGTERM drains
// (Worker::beginDrain): the router routes nothing new here, the streams in
// progress finish here (up to --drain-timeout; then the router migrates
// what is left), the worker leaves routing and exits 0.
// SIGHUP re-reads the cluster TLS certificate, key and CA (--cluster-tls-*).
#include <signal.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/cluster_flags.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/engine_flags.h"
#include "cli/path_flags.h"
#include "cli/stop_signals.h"
#include "common/status.h"
#include "proto/convert/worker_enum_names.h"
#include "server/worker/worker.h"

namespace tandem::cli {
namespace {

// after the worker left routing: how long calls still here (those the
// router is migrating away past the drain deadline) may take to end.
constexpr std::chrono::seconds kLeaveGrace{2};

struct WorkerArgs {
  std::string role = "both";
  std::string model;
  std::string served_model_name;
  std::string listen = "127.0.0.1:0";
  std::string advertise_host;
  std::string router;
  int metrics_port = 0;
  std::string kv_transport = "auto";
  double prefill_timeout_s = 10;
  double drain_timeout_s = 30;
  uint64_t kv_staging_bytes = uint64_t{1} << 30;
  EngineFlags engine;
  ClusterFlags cluster;
};

absl::Status runWorker(const WorkerArgs& args,
                       const std::function<void(worker::WorkerOptions&)>& customize) {
  worker::WorkerOptions options;
  ASSIGN_OR_RETURN(options.role, worker::parseWorkerRole(args.role));
  options.model_path = args.model.empty() ? defaultModelPath() : args.model;
  options.model_name = args.served_model_name;
  ASSIGN_OR_RETURN(worker::HostPort listen, worker::parseHostPort(args.listen));
  options.host = listen.host;
  options.port = listen.port;
  options.advertise_host = args.advertise_host;
  options.router_address = args.router;
  ASSIGN_OR_RETURN(options.cluster_auth, clusterAuth(args.cluster));
  options.metrics_port = args.metrics_port;
  ASSIGN_OR_RETURN(options.kv_transport, kv_transport::parseTransportChoice(args.kv_transport));
  if (!(args.prefill_timeout_s > 0)) {
    return absl::InvalidArgumentError("--prefill-timeout must be positive");
  }
  options.prefill_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(args.prefill_timeout_s * 1000));
  options.drain_timeout = std::chrono::milliseconds(static_cast<int64_t>(args.drain_timeout_s * 1000));
  ASSIGN_OR_RETURN(options.engine, engineOptions(args.engine));
  options.kv_staging_bytes = args.kv_staging_bytes;
  if (customize) customize(options);
  const sigset_t stop_signals = blockStopSignals();

  std::fprintf(stderr, "tandem worker: loading %s\n", options.model_path.c_str());
  ASSIGN_OR_RETURN(worker::WorkerPtr worker, worker::Worker::create(options));
  warnIfUnauthenticated(*options.cluster_auth, "tandem worker");
  const tandem::v1::WorkerInfo& info = worker->info();
  std::string metrics = info.metrics_url().empty() ? "none" : info.metrics_url();
  std::fprintf(stderr, "tandem worker: %s %s serving grpc %s, metrics %s\n", rpc::workerRoleName(info.role()).data(),
               info.worker_id().c_str(), info.address().c_str(), metrics.c_str());
  if (!info.kv_endpoint().empty()) {
    std::fprintf(stderr, "tandem worker: KV receiver %s\n", info.kv_endpoint().c_str());
  }
  std::fflush(stderr);

  const int sig = waitForStopSignal(
      stop_signals, [&options] { reloadClusterTls(*options.cluster_auth, "tandem worker"); });
  std::fprintf(stderr, "tandem worker: %s\n", stopSignalName(sig));
  worker->beginDrain();
  worker->waitLeftRouting();
  // past the drain deadline the streams still here are cut now: the router
  // migrates them (a grace would let them run on where it no longer looks).
  worker->shutdown(worker->leftAtDrainDeadline() ? std::chrono::milliseconds(0) : kLeaveGrace);
  std::fprintf(stderr, "tandem worker: stopped\n");
  return absl::OkStatus();
}

}  // namespace

void registerWorkerCommand(CLI::App& app,
                           std::function<void(worker::WorkerOptions&)> customize) {
  auto args = std::make_shared<WorkerArgs>();
  CLI::App* cmd = app.add_subcommand(
      "worker", "run a prefill, decode or combined worker of a disaggregated deployment");
  cmd->add_option("--role", args->role, "prefill | decode | both")
      ->check(CLI::IsMember({"prefill", "decode", "both"}))
      ->capture_default_str();
  cmd->add_option("--model", args->model, "HF dir or .gguf (default: the embedded stories260K)");
  cmd->add_option("--served-model-name", args->served_model_name,
                  "the model id clients use (default: the file name without extension)");
  cmd->add_option("--listen", args->listen, "HOST:PORT of the Worker gRPC service (port 0 = any)")
      ->capture_default_str();
  cmd->add_option("--advertise-host", args->advertise_host,
                  "host others dial to reach this worker (default: the --listen host, or the "
                  "hostname when it is a wildcard)");
  cmd->add_option("--router", args->router,
                  "the router's internal HOST:PORT (its --internal-port) to register with");
  cmd->add_option("--metrics-port", args->metrics_port,
                  "HTTP port of /metrics and /health (0 = any free, -1 = none)")
      ->capture_default_str();
  cmd->add_option("--kv-transport", args->kv_transport,
                  "how KV blocks move: auto (shm on the same host, else grpc), grpc, shm, "
                  "ucx (UCX RMA over what UCX finds; UCX_TLS chooses; P and D alike)")
      ->check(CLI::IsMember({"auto", "grpc", "shm", "ucx"}))
      ->capture_default_str();
  cmd->add_option("--prefill-timeout", args->prefill_timeout_s,
                  "seconds a remote prefill may take before D prefills locally")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", args->drain_timeout_s,
                  "seconds the streams in progress may take to finish here once the worker "
                  "drains (SIGINT/SIGTERM, POST /drain); then the router migrates what is left")
      ->capture_default_str();
  cmd->add_option("--kv-staging-bytes", args->kv_staging_bytes,
                  "--backend hip: pinned host bytes KV transfers stage through, per direction "
                  "(P's sends, D's receives); a transfer that does not fit is prefilled locally")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  addEngineFlags(cmd, &args->engine);
  addClusterFlags(cmd, &args->cluster);
  registerWorkerDrainCommand(cmd);
  setAction(cmd, [args, cmd, customize = std::move(customize)] {
    // `tandem worker drain` ran its own action.
    if (cmd->got_subcommand("drain")) return absl::OkStatus();
    // before anything starts: the model and every file a flag names.
    RETURN_IF_ERROR(checkModelFlag("--model", args->model.empty() ? defaultModelPath() : args->model));
    RETURN_IF_ERROR(checkFileFlags(cmd, {"--cluster-secret-file", "--cluster-tls-cert", "--cluster-tls-key", "--cluster-tls-ca"}));
    return runWorker(*args, customize);
  });
}

}  // namespace tandem::cli
