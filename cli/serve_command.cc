// `tandem serve`: the OpenAI HTTP API and the tandem gRPC API over an engine
// in this process (the embedded stories260K model by default). SIGINT or
// SIGTERM drains: health turns 503, requests in progress finish (up to
// --drain-timeout), then the process exits 0.
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "cli/engine_flags.h"
#include "common/status.h"
#include "router/frontend/frontend_server.h"
#include "router/generate/local_backend.h"
#include "server/engine/engine_loop.h"

namespace tandem::cli {
namespace {

struct ServeArgs {
  std::string model;
  std::string served_model_name;
  std::string chat_template;
  router::FrontendOptions frontend;
  std::vector<std::string> api_keys;
  double drain_timeout_s = 30;
  int request_timeout_s = 30;
  size_t max_request_mb = 4;
  EngineFlags engine;
};

// SIGINT and SIGTERM are blocked in every thread (the mask is inherited)
// and taken by sigwait() on the main thread.
sigset_t blockStopSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

absl::Status runServe(ServeArgs args) {
  if (args.model.empty()) args.model = defaultModelPath();
  if (const char* env = std::getenv("TANDEM_API_KEYS"); env != nullptr && *env != '\0') {
    for (absl::string_view key : absl::StrSplit(env, ',', absl::SkipWhitespace())) {
      args.api_keys.emplace_back(key);
    }
  }
  args.frontend.service.api_keys = args.api_keys;
  args.frontend.max_request_bytes = args.max_request_mb << 20;
  args.frontend.request_timeout = std::chrono::seconds(args.request_timeout_s);
  ASSIGN_OR_RETURN(engine::LocalEngineOptions engine_options, engineOptions(args.engine));
  const sigset_t stop_signals = blockStopSignals();

  ASSIGN_OR_RETURN(router::FrontendServerPtr frontend, router::FrontendServer::start(args.frontend));
  std::fprintf(stderr, "tandem serve: loading %s\n", args.model.c_str());
  ASSIGN_OR_RETURN(engine::LocalEnginePtr local, engine::LocalEngine::create(args.model, engine_options));
  const int max_model_len = local->maxModelLen();
  const int num_blocks = local->numBlocks();
  auto backend = std::make_unique<router::LocalBackend>(
      std::make_unique<engine::EngineLoop>(std::move(local)));
  ASSIGN_OR_RETURN(router::ServedModelPtr model,
                   router::ServedModel::load(args.model, args.served_model_name, max_model_len,
                                             args.chat_template));
  const std::string name = model->name();
  if (model->usesFallbackTemplate()) {
    std::fprintf(stderr, "tandem serve: the model has no chat template; chat uses a plain one "
                         "(--chat-template FILE to set one)\n");
  }
  RETURN_IF_ERROR(frontend->serve(std::move(model), backend.get()));
  std::fprintf(stderr,
               "tandem serve: model '%s' (context %d, %d KV blocks) on http://%s:%d (OpenAI API) "
               "and grpc %s:%d\n",
               name.c_str(), max_model_len, num_blocks, args.frontend.host.c_str(),
               frontend->httpPort(), args.frontend.host.c_str(), frontend->grpcPort());
  std::fflush(stderr);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::fprintf(stderr, "tandem serve: %s, draining (up to %.0f s)\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM", args.drain_timeout_s);
  frontend->drainAndStop(std::chrono::milliseconds(static_cast<int64_t>(args.drain_timeout_s * 1000)));
  backend->stop();
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
  cmd->add_option("--host", args->frontend.host, "address to listen on")->capture_default_str();
  cmd->add_option("--http-port", args->frontend.http_port, "OpenAI HTTP API port (0 = any free)")
      ->capture_default_str();
  cmd->add_option("--grpc-port", args->frontend.grpc_port, "gRPC API port (0 = any free, -1 = off)")
      ->capture_default_str();
  cmd->add_option("--http-threads", args->frontend.http_threads, "HTTP I/O threads")->capture_default_str();
  cmd->add_option("--api-key", args->api_keys,
                  "require Authorization: Bearer KEY (repeatable; also TANDEM_API_KEYS=k1,k2)");
  cmd->add_option("--chat-template", args->chat_template, "a Jinja chat template file to use");
  cmd->add_option("--max-pending-requests", args->frontend.service.max_pending_requests,
                  "generation requests in progress before 429")->capture_default_str();
  cmd->add_option("--max-prompt-tokens", args->frontend.service.max_prompt_tokens,
                  "longest prompt accepted (0 = the context length)")->capture_default_str();
  cmd->add_option("--max-request-mb", args->max_request_mb, "largest request body, MiB")
      ->capture_default_str();
  cmd->add_option("--request-timeout", args->request_timeout_s,
                  "seconds a client has to send a whole request")->capture_default_str();
  cmd->add_option("--drain-timeout", args->drain_timeout_s,
                  "seconds in-flight requests may take to finish on SIGINT/SIGTERM")->capture_default_str();
  addEngineFlags(cmd, &args->engine);
  setAction(cmd, [args] { return runServe(*args); });
}

}  // namespace tandem::cli
