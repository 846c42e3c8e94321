// `tandem serve`: the OpenAI HTTP API and the tandem gRPC API over the
// embedded stories260K model by default.
//
// By default it runs `tandem router` plus --prefill-workers (1) prefill and
// --decode-workers (1) decode `tandem worker` processes, supervised by this
// one (serve_cluster.h). With --decode-workers 0 (and --prefill-workers 0)
// the router and one engine run in this process, as before issue 5.
// SIGINT or SIGTERM drains: health turns 503, requests in progress finish
// (up to --drain-timeout), then the process exits 0. SIGHUP re-reads the TLS
// certificate and the API key file (passed on to the router process).
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/cluster_flags.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/engine_flags.h"
#include "cli/frontend_flags.h"
#include "cli/path_flags.h"
#include "cli/planner_flags.h"
#include "cli/serve_cluster.h"
#include "cli/stop_signals.h"
#include "common/process/supervisor.h"
#include "common/status.h"
#include "router/cluster/route_planner.h"
#include "router/frontend/frontend_server.h"
#include "server/engine/engine_loop.h"
#include "server/engine/local_generator.h"
#include "server/worker/worker_options.h"

namespace tandem::cli {
namespace {

struct ServeArgs {
  std::string model;
  std::string served_model_name;
  FrontendFlags web;
  EngineFlags engine;
  int prefill_workers = 1;
  int decode_workers = 1;
  bool autoscale = false;
  PlannerFlags planner;
  // the flags as given, to pass on to the router and worker processes.
  std::vector<std::string> router_flags;
  std::vector<std::string> worker_flags;
};

// the flags among `names` given on the command line, as they were given
// (options with each of their values, flags alone).
std::vector<std::string> givenFlags(CLI::App* cmd, const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& name : names) {
    const CLI::Option* opt = cmd->get_option(name);
    if (opt->count() == 0) continue;
    if (opt->get_expected_max() == 0 || opt->get_type_size_max() == 0) {  // a flag
      out.push_back(name);
      continue;
    }
    for (const std::string& value : opt->results()) {
      out.push_back(name);
      out.push_back(value);
    }
  }
  return out;
}

// the worker processes' engine flags: --threads split evenly among the
// workers (0 = every core; each gets at least 1) and a --kv-budget split
// evenly too (it is the budget of the whole `tandem serve`).
absl::StatusOr<std::vector<std::string>> workerEngineFlags(const ServeArgs& args) {
  ASSIGN_OR_RETURN(engine::EngineAssemblyOptions options, engineOptions(args.engine));
  // with --autoscale, shares that still fit when the planner runs the most workers.
  const int workers = std::max(1, args.autoscale ? std::min(args.planner.max_prefill + args.planner.max_decode,
                                                            args.planner.max_total)
                                                 : args.prefill_workers + args.decode_workers);
  const int total_threads = options.num_threads > 0
                                ? options.num_threads
                                : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::string> flags = {"--threads", std::to_string(std::max(1, total_threads / workers))};
  // every worker on the same backend and device.
  if (options.backend != kernels::BackendKind::kCpu) {
    flags.insert(flags.end(), {"--backend", std::string(kernels::backendKindName(options.backend)),
                               "--device", std::to_string(options.device)});
    if (options.enforce_eager) flags.push_back("--enforce-eager");
  }
  if (options.kv_budget_bytes > 0) {
    const uint64_t bytes = std::max<uint64_t>(1, options.kv_budget_bytes / workers);
    flags.insert(flags.end(), {"--kv-budget", std::to_string(bytes)});
  } else if (options.kv_fraction > 0) {
    flags.insert(flags.end(), {"--kv-budget", absl::StrFormat("%.6f", options.kv_fraction / workers)});
  }
  // the KV tiers are the serve's too: their sizes are split evenly.
  const engine::KvTierOptions& tiers = options.tiers;
  if (tiers.host_bytes > 0) {
    flags.insert(flags.end(),
                 {"--kv-host-bytes", std::to_string(std::max<uint64_t>(1, tiers.host_bytes / workers))});
  }
  if (!tiers.disk_path.empty()) {
    flags.insert(flags.end(),
                 {"--kv-disk-bytes", std::to_string(std::max<uint64_t>(1, tiers.disk_bytes / workers)),
                  "--kv-disk-io", tiers.disk_io,
                  "--kv-disk-queue-depth", std::to_string(tiers.disk_queue_depth),
                  "--kv-disk-min-hits", std::to_string(tiers.disk_min_hits)});
  }
  flags.insert(flags.end(), args.worker_flags.begin(), args.worker_flags.end());
  return flags;
}

absl::Status serveWithWorkers(const ServeArgs& args) {
  if (args.prefill_workers < 0) return absl::InvalidArgumentError("--prefill-workers must be >= 0");
  if (args.web.options.grpc_port < 0) {
    return absl::InvalidArgumentError(
        "--grpc-port -1 needs --decode-workers 0: the router of worker processes serves gRPC");
  }
  // the router process reads them again; a bad one is one clear error here.
  RETURN_IF_ERROR(frontendOptions(args.web).status());
  ServeClusterConfig config;
  ASSIGN_OR_RETURN(config.tandem_binary, process::selfExecutable());
  config.model = args.model;
  config.prefill_workers = args.prefill_workers;
  config.decode_workers = args.decode_workers;
  config.host = args.web.options.host;
  config.http_port = args.web.options.http_port;
  config.grpc_port = args.web.options.grpc_port;
  config.router_flags = args.router_flags;
  // one secret for this cluster's internal ports: the caller's, or a fresh one.
  if (const char* given = std::getenv(grpc_util::kClusterSecretEnv); given != nullptr && *given != '\0') {
    config.cluster_secret = given;
  } else {
    ASSIGN_OR_RETURN(config.cluster_secret, randomClusterSecret());
  }
  ASSIGN_OR_RETURN(config.worker_flags, workerEngineFlags(args));
  config.kv_disk_path = args.engine.options.tiers.disk_path;
  config.drain_timeout_s = args.web.drain_timeout_s;
  config.autoscale = args.autoscale;
  config.planner = args.planner;
  const sigset_t stop_signals = blockStopSignals();
  std::fprintf(stderr, "tandem serve: starting the router, %d prefill and %d decode workers (%s)\n",
               config.prefill_workers, config.decode_workers, config.model.c_str());
  return runServeCluster(config, stop_signals);
}

absl::Status runServe(ServeArgs args) {
  if (args.decode_workers < 0) return absl::InvalidArgumentError("--decode-workers must be >= 0");
  if (args.decode_workers > 0) return serveWithWorkers(args);
  if (args.autoscale) return absl::InvalidArgumentError("--autoscale needs worker processes (--decode-workers >= 1)");
  if (args.prefill_workers > 0) {
    return absl::InvalidArgumentError("--prefill-workers needs --decode-workers >= 1");
  }
  ASSIGN_OR_RETURN(engine::EngineAssemblyOptions engine_options, engineOptions(args.engine));
  const sigset_t stop_signals = blockStopSignals();

  ASSIGN_OR_RETURN(const router::FrontendOptions frontend_options, frontendOptions(args.web));
  ASSIGN_OR_RETURN(router::FrontendServerPtr frontend, router::FrontendServer::start(frontend_options));
  std::fprintf(stderr, "tandem serve: loading %s\n", args.model.c_str());
  ASSIGN_OR_RETURN(engine::EngineAssemblyPtr local, engine::EngineAssembly::create(args.model, engine_options));
  const int max_model_len = local->maxModelLen();
  const int num_blocks = local->numBlocks();
  auto generator = std::make_unique<engine::LocalGenerator>(
      std::make_unique<engine::EngineLoop>(std::move(local)));
  ASSIGN_OR_RETURN(router::ServedModelPtr model,
                   router::ServedModel::load(args.model, args.served_model_name, max_model_len,
                                             args.web.chat_template));
  const std::string name = model->name();
  if (model->usesFallbackTemplate()) {
    std::fprintf(stderr, "tandem serve: the model has no chat template; chat uses a plain one "
                         "(--chat-template FILE to set one)\n");
  }
  RETURN_IF_ERROR(frontend->serve(std::move(model), generator.get()));
  std::fprintf(stderr,
               "tandem serve: model '%s' (context %d, %d KV blocks) on %s://%s:%d (OpenAI API) "
               "and grpc %s:%d\n",
               name.c_str(), max_model_len, num_blocks, frontend_options.tls ? "https" : "http",
               args.web.options.host.c_str(),
               frontend->httpPort(), args.web.options.host.c_str(), frontend->grpcPort());
  std::fflush(stderr);

  const int sig = waitForStopSignal(
      stop_signals, [&frontend_options] { reloadFrontend(frontend_options, "tandem serve"); });
  std::fprintf(stderr, "tandem serve: %s, draining (up to %.0f s)\n",
               stopSignalName(sig), args.web.drain_timeout_s);
  frontend->drainAndStop(std::chrono::milliseconds(static_cast<int64_t>(args.web.drain_timeout_s * 1000)));
  generator->stop();
  std::fprintf(stderr, "tandem serve: stopped\n");
  return absl::OkStatus();
}

}  // namespace

void registerServeCommand(CLI::App& app) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "serve a model over the OpenAI HTTP API and the tandem gRPC API");
  cmd->add_option("--model", args->model, "HF dir or .gguf (default: the embedded stories260K)");
  cmd->add_option("--served-model-name", args->served_model_name,
                  "the model id clients use (default: the file name without extension)");
  addFrontendFlags(cmd, &args->web, "gRPC API port (0 = any free, -1 = off)");
  addEngineFlags(cmd, &args->engine);
  cmd->add_option("--prefill-workers", args->prefill_workers,
                  "prefill worker processes (tandem worker --role prefill)")->capture_default_str();
  cmd->add_option("--decode-workers", args->decode_workers,
                  "decode worker processes; 0 = router and engine in this process (then "
                  "--prefill-workers 0 too). --threads, --kv-budget, --kv-host-bytes and --kv-disk-bytes are split "
                  "evenly among the workers; each gets its own subdirectory of --kv-disk-path")->capture_default_str();
  // passed on to the processes as given; the defaults shown are theirs.
  const worker::WorkerOptions worker_defaults;
  cmd->add_option("--max-local-prefill-tokens",
                  "router: prompts with more uncached tokens than this are prefilled on a "
                  "prefill worker")
      ->type_name("INT")
      ->default_str(std::to_string(router::cluster::RoutePlannerOptions{}.max_local_prefill_tokens));
  cmd->add_option("--kv-transport", "workers: auto|grpc|shm|ucx")
      ->type_name("TEXT")
      ->default_str("auto");
  cmd->add_option("--prefill-timeout",
                  "decode workers: seconds a remote prefill may take before prefilling locally")
      ->type_name("FLOAT")
      ->default_str(absl::StrCat(
          std::chrono::duration<double>(worker_defaults.prefill_timeout).count()));
  cmd->add_option("--kv-staging-bytes",
                  "workers, --backend hip: pinned host bytes KV transfers stage through, per direction")
      ->type_name("UINT")
      ->default_str(std::to_string(worker_defaults.kv_staging_bytes));
  cmd->add_flag("--autoscale", args->autoscale,
                "run the planner in this process: it adds and drains worker processes within "
                "--min-prefill/--max-prefill/--min-decode/--max-decode/--max-total, starting from "
                "--prefill-workers/--decode-workers (--planner-policy, --planner-interval, ...)");
  addPlannerFlags(cmd, &args->planner, "planner-");
  setAction(cmd, [args, cmd] {
    // before anything starts: the model and every file a flag names.
    if (args->model.empty()) args->model = defaultModelPath();
    RETURN_IF_ERROR(checkModelFlag("--model", args->model));
    RETURN_IF_ERROR(checkFileFlags(cmd, {"--chat-template", "--api-key-file", "--tls-cert", "--tls-key",
                                         "--tls-client-ca", "--planner-profile"}));
    args->router_flags = givenFlags(
        cmd, {"--served-model-name", "--http-threads", "--api-key", "--api-key-file", "--tls-cert",
              "--tls-key", "--tls-client-ca", "--chat-template",
              "--max-pending-requests", "--max-admitted-seqs", "--max-admitted-prompt-tokens",
              "--max-prompt-tokens", "--prepare-threads", "--max-prepare-queue", "--max-request-mb",
              "--request-timeout", "--drain-timeout", "--max-local-prefill-tokens", "--access-log",
              "--access-log-format"});
    args->worker_flags = givenFlags(
        cmd, {"--served-model-name", "--block-size", "--kv-cache-dtype", "--max-num-seqs", "--max-batched-tokens",
              "--chunk-size", "--max-model-len", "--no-prefix-cache", "--kv-transport",
              "--prefill-timeout", "--kv-staging-bytes"});
    return runServe(*args);
  });
}

}  // namespace tandem::cli
