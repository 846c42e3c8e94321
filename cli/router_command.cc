// `tandem router`: the OpenAI HTTP API and the tandem gRPC API in front of
// worker processes (disaggregated serving). Workers register on the
// router's internal port (tandem.v1.Registry, --internal-host/-port, apart
// from the public ports, authenticated by the cluster flags) or are listed
// (--workers, --workers-file, --workers-dns). The router learns the model
// from the first healthy decode worker (tokenizer from its model path, or
// from --model), then serves. SIGINT or SIGTERM drains like `tandem serve`;
// SIGHUP re-reads the TLS certificate, the API key file and the cluster's
// TLS certificate.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "cli/cluster_flags.h"
#include "cli/command.h"
#include "cli/frontend_flags.h"
#include "cli/path_flags.h"
#include "cli/stop_signals.h"
#include "common/host_port.h"
#include "common/status.h"
#include "planner/profile.h"
#include "proto/convert/worker_enum_names.h"
#include "router/cluster/cluster_metrics.h"
#include "router/cluster/kv_index.h"
#include "router/cluster/kv_subscriber.h"
#include "router/cluster/registry_server.h"
#include "router/cluster/remote_generator.h"
#include "router/cluster/routing_policy.h"
#include "router/cluster/worker_discovery.h"
#include "router/cluster/worker_pool.h"
#include "router/frontend/frontend_server.h"

namespace tandem::cli {
namespace {

using namespace tandem::router::cluster;

struct RouterArgs {
  std::string model;
  std::string served_model_name;
  FrontendFlags web;
  // the internal listener (the workers' registry); host "" = --host.
  std::string internal_host;
  int internal_port = 8002;
  ClusterFlags cluster;
  std::vector<std::string> workers;
  std::string workers_file;
  std::string workers_dns;
  RoutePlannerOptions planner;
  double ttft_slo_ms = 0;
  size_t kv_index_max_blocks = KvIndexOptions{}.max_blocks;
  double migration_timeout_s = 30;
  std::string prefill_profile;
};

// a worker profile (`tandem planner profile`'s JSON) gives the load model
// its starting rates and the prefill rate's shape by prompt length: each
// worker's learned speed is a factor against that shape, so a worker seen
// on short prompts is predicted right for a long one.
absl::Status learnAgainstProfile(const std::string& path, WorkerLoadModelOptions* load) {
  ASSIGN_OR_RETURN(planner::WorkerProfile profile, planner::WorkerProfile::load(path));
  load->default_prefill_tokens_per_s = profile.prefillTokensPerS(2048);
  load->default_decode_s_per_step = profile.decodeItlMs(1, 2048) / 1000;
  load->expected_prefill_tokens_per_s = [profile](double prompt_tokens) {
    return profile.prefillTokensPerS(prompt_tokens);
  };
  return absl::OkStatus();
}

// the first healthy decode-capable worker, waiting for one; nullopt when a
// stop signal came first (its number in *sig). SIGHUP runs `on_reload`.
std::optional<WorkerState> waitForDecodeWorker(WorkerPool& pool, const sigset_t& stop_signals,
                                               int* sig, const std::function<void()>& on_reload) {
  while (true) {
    for (const WorkerState& w : pool.snapshot()) {
      if (w.routable() && w.decodeCapable()) return w;
    }
    const timespec wait{0, 100 * 1000 * 1000};
    if (int s = sigtimedwait(&stop_signals, nullptr, &wait); s > 0) {
      if (s == SIGHUP) {
        on_reload();
        continue;
      }
      *sig = s;
      return std::nullopt;
    }
  }
}

absl::Status runRouter(RouterArgs args) {
  if (args.web.options.grpc_port < 0) {
    return absl::InvalidArgumentError("the router needs its gRPC port");
  }
  ASSIGN_OR_RETURN(router::FrontendOptions frontend_options, frontendOptions(args.web));
  // every input checked before a thread starts: an error return past
  // pool.start() would leave its threads running into destroyed members
  RemoteGeneratorOptions generator_options;
  generator_options.planner = args.planner;
  if (!args.prefill_profile.empty()) {
    RETURN_IF_ERROR(learnAgainstProfile(args.prefill_profile, &generator_options.planner.load));
  }
  const char* http_scheme = frontend_options.tls != nullptr ? "https" : "http";
  ASSIGN_OR_RETURN(grpc_util::ClusterAuthPtr auth, clusterAuth(args.cluster));
  const auto reload = [&frontend_options, &auth] {
    reloadFrontend(frontend_options, "tandem router");
    reloadClusterTls(*auth, "tandem router");
  };
  RegistryServerOptions registry_options;
  registry_options.host = args.internal_host.empty() ? args.web.options.host : args.internal_host;
  registry_options.port = args.internal_port;
  registry_options.auth = auth;
  const sigset_t stop_signals = blockStopSignals();

  WorkerPoolOptions pool_options;
  pool_options.auth = auth;
  WorkerPool pool(pool_options, nullptr);
  ASSIGN_OR_RETURN(RegistryServerPtr registry, RegistryServer::start(registry_options, &pool));
  frontend_options.grpc_at_start = true;
  ASSIGN_OR_RETURN(router::FrontendServerPtr frontend, router::FrontendServer::start(frontend_options));
  ClusterMetrics metrics(frontend->metrics().registry());
  pool.setMetrics(&metrics);
  pool.start();
  // the pool's threads use `metrics`, declared after the pool: on every
  // return from here on (an error included) they stop before it goes
  const absl::Cleanup stop_pool = [&pool] { pool.stop(); };
  WorkerDiscoveryOptions discovery_options;
  discovery_options.static_workers = args.workers;
  discovery_options.workers_file = args.workers_file;
  discovery_options.workers_dns = args.workers_dns;
  WorkerDiscovery discovery(discovery_options, &pool);
  RETURN_IF_ERROR(discovery.start());
  KvIndex index(KvIndexOptions{.max_blocks = args.kv_index_max_blocks});
  KvSubscriber subscriber(KvSubscriberOptions{}, &pool, &index, &metrics);
  subscriber.start();
  generator_options.planner.ttft_slo_s = args.ttft_slo_ms / 1000;
  generator_options.planner.spill_prefill_over_s = args.ttft_slo_ms / 1000;
  generator_options.no_worker_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(args.migration_timeout_s * 1000));
  RemoteGenerator generator(generator_options, &pool, &index, &metrics);
  const std::string& host = args.web.options.host;
  warnIfUnauthenticated(*auth, "tandem router");
  std::fprintf(stderr,
               "tandem router: listening on %s://%s:%d and grpc %s:%d, internal %s (workers "
               "register there), waiting for workers\n",
               http_scheme, host.c_str(), frontend->httpPort(), host.c_str(), frontend->grpcPort(),
               formatHostPort(registry_options.host, registry->port()).c_str());
  std::fflush(stderr);

  auto shutdown = [&](int sig) {
    std::fprintf(stderr, "tandem router: %s, draining (up to %.0f s)\n",
                 stopSignalName(sig), args.web.drain_timeout_s);
    frontend->drainAndStop(
        std::chrono::milliseconds(static_cast<int64_t>(args.web.drain_timeout_s * 1000)));
    registry->shutdown(std::chrono::milliseconds(0));
    generator.stop();
    subscriber.stop();
    discovery.stop();
    pool.stop();
    std::fprintf(stderr, "tandem router: stopped\n");
  };

  int sig = 0;
  std::optional<WorkerState> first = waitForDecodeWorker(pool, stop_signals, &sig, reload);
  if (!first) {
    shutdown(sig);
    return absl::OkStatus();
  }
  // without --model the tokenizer comes from the path the first decode
  // worker names: acceptable only because registrants are authenticated
  // (the cluster secret or TLS, or loopback-only listeners) and their
  // reports checked; from now on workers of another model are refused.
  const std::string model_path = args.model.empty() ? first->info.model_path() : args.model;
  pool.setModelName(first->info.model_name());
  const std::string name =
      args.served_model_name.empty() ? first->info.model_name() : args.served_model_name;
  const int max_model_len = first->info.max_model_len();
  std::fprintf(stderr, "tandem router: worker %s (%s) at %s; loading the tokenizer of %s\n",
               first->info.worker_id().c_str(), rpc::workerRoleName(first->info.role()).data(), first->address.c_str(),
               model_path.c_str());
  ASSIGN_OR_RETURN(router::ServedModelPtr model,
                   router::ServedModel::load(model_path, name, max_model_len, args.web.chat_template));
  const std::string served_name = model->name();
  if (model->usesFallbackTemplate()) {
    std::fprintf(stderr, "tandem router: the model has no chat template; chat uses a plain one "
                         "(--chat-template FILE to set one)\n");
  }
  RETURN_IF_ERROR(frontend->serve(std::move(model), &generator));
  std::fprintf(stderr, "tandem router: model '%s' (context %d) on %s://%s:%d (OpenAI API) and grpc %s:%d\n",
               served_name.c_str(), max_model_len, http_scheme, host.c_str(), frontend->httpPort(), host.c_str(),
               frontend->grpcPort());
  std::fflush(stderr);

  sig = waitForStopSignal(stop_signals, reload);
  shutdown(sig);
  return absl::OkStatus();
}

}  // namespace

void registerRouterCommand(CLI::App& app) {
  auto args = std::make_shared<RouterArgs>();
  CLI::App* cmd = app.add_subcommand(
      "router", "serve the OpenAI HTTP and tandem gRPC APIs in front of prefill/decode workers");
  cmd->add_option("--workers", args->workers, "worker addresses host:port (comma-separated, repeatable)")
      ->delimiter(',');
  cmd->add_option("--workers-file", args->workers_file,
                  "a file of worker addresses, one host:port a line (re-read every 2 s)");
  cmd->add_option("--workers-dns", args->workers_dns,
                  "NAME:PORT: every address NAME resolves to is a worker (resolved every 5 s)");
  cmd->add_option("--model", args->model,
                  "HF dir or .gguf for the tokenizer (default: the path the workers report)");
  cmd->add_option("--served-model-name", args->served_model_name,
                  "the model id clients use (default: the workers' model name)");
  cmd->add_option("--max-local-prefill-tokens", args->planner.max_local_prefill_tokens,
                  "a prompt with more tokens not cached on its decode worker is prefilled on a "
                  "prefill worker")->capture_default_str();
  cmd->add_option("--max-prefill-queue-tokens", args->planner.max_prefill_queue_tokens,
                  "a prefill worker with this many prompt tokens queued takes no more")
      ->capture_default_str();
  cmd->add_option("--policy", args->planner.policy,
                  "how the decode (and prefill) worker is chosen: kv (least predicted TTFT given "
                  "the KV cache and load), dynamo, least_loaded, round_robin, random, power_of_two")
      ->check(CLI::IsMember(router::cluster::routingPolicyNames()))
      ->capture_default_str();
  cmd->add_option("--router-temperature", args->planner.costs.temperature,
                  "kv/dynamo: softmax sampling temperature over the costs (0 = the best)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--ttft-slo-ms", args->ttft_slo_ms,
                  "refuse (429 with Retry-After) a request no worker is predicted to start within "
                  "this many ms, and have a decode worker prefill a prompt itself while the prefill "
                  "workers would start it later and it can within (0 = neither)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--kv-index-max-blocks", args->kv_index_max_blocks,
                  "(worker, block) entries the KV index keeps in all; the oldest go first (0 = no bound)")
      ->capture_default_str();
  cmd->add_option("--prefill-profile", args->prefill_profile,
                  "a worker profile (JSON of `tandem planner profile`, e.g. planner/profiles/*.json): "
                  "the router learns each worker's prefill speed as a factor against its rate by "
                  "prompt length (default: one rate for every length)");
  cmd->add_option("--migration-timeout", args->migration_timeout_s,
                  "seconds a request waits for a decode worker before failing")->capture_default_str();
  addFrontendFlags(cmd, &args->web, "gRPC port of the public tandem API (0 = any free)");
  cmd->add_option("--internal-host", args->internal_host,
                  "address of the internal port (the workers' registry; default: --host)");
  cmd->add_option("--internal-port", args->internal_port,
                  "internal port: workers register there (--router of tandem worker; 0 = any free)")
      ->capture_default_str();
  addClusterFlags(cmd, &args->cluster);
  registerRouterSimulateCommand(cmd);
  setAction(cmd, [args, cmd] {
    // `tandem router simulate` ran its own action.
    if (cmd->got_subcommand("simulate")) return absl::OkStatus();
    // before anything starts: the model (when given) and every file a flag names.
    if (!args->model.empty()) RETURN_IF_ERROR(checkModelFlag("--model", args->model));
    RETURN_IF_ERROR(checkFileFlags(cmd, {"--chat-template", "--api-key-file", "--tls-cert", "--tls-key", "--tls-client-ca", "--prefill-profile",
                                         "--cluster-secret-file", "--cluster-tls-cert", "--cluster-tls-key", "--cluster-tls-ca"}));
    return runRouter(*args);
  });
}

}  // namespace tandem::cli
