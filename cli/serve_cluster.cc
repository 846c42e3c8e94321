#include "cli/serve_cluster.h"

#include <signal.h>
#include <time.h>

#include <cstdio>
#include <mutex>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/serve_autoscale.h"
#include "common/grpc/cluster_auth.h"
#include "common/process/supervisor.h"
#include "common/status.h"

namespace tandem::cli {
namespace {

constexpr char kRouter[] = "router";
// the router's internal port (the registry) and the workers listen here:
// every process of `tandem serve` runs on this machine.
constexpr char kInternalHost[] = "127.0.0.1";

// "host:port" with brackets around an IPv6 literal.
std::string hostPort(const std::string& host, int port) {
  return host.find(':') != std::string::npos ? absl::StrCat("[", host, "]:", port)
                                             : absl::StrCat(host, ":", port);
}

// the port of the first "HOST:PORT" word after `key` in `line`; -1 if none.
int portAfter(absl::string_view line, absl::string_view key) {
  size_t at = line.find(key);
  if (at == absl::string_view::npos) return -1;
  absl::string_view word = line.substr(at + key.size());
  word = word.substr(0, word.find_first_of(" ,)"));
  size_t colon = word.rfind(':');
  int port;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(word.substr(colon + 1), &port)) return -1;
  return port;
}

// the state the children's output tells; guarded by mu.
struct ClusterState {
  std::mutex mu;
  int http_port = -1;  // the router's bound ports, once it said them
  int grpc_port = -1;
  int internal_port = -1;
  bool ready_printed = false;
  bool stopping = false;
  std::set<std::string> came_up;  // children that printed their ready line
  absl::Status fatal;
};

class ServeCluster {
 public:
  explicit ServeCluster(const ServeClusterConfig& config) : config_(config) {}

  absl::Status run(const sigset_t& stop_signals) {
    process::SupervisorOptions options;
    options.on_line = [this](const std::string& name, absl::string_view line) { onLine(name, line); };
    options.on_exit = [this](const std::string& name, process::ExitStatus status, bool will_restart) {
      // a child stopped on purpose (by stop(), or drained by the planner) is no failure.
      if (will_restart) onExit(name, status);
    };
    ASSIGN_OR_RETURN(supervisor_, process::Supervisor::create(std::move(options)));
    RETURN_IF_ERROR(supervisor_->start({.name = kRouter,
                                        .argv = routerArgv(config_.http_port, config_.grpc_port, 0),
                                        .extra_env = childEnv()}));

    bool workers_started = false;
    const timespec tick{0, 100 * 1000 * 1000};
    for (;;) {
      siginfo_t info;
      const int sig = sigtimedwait(&stop_signals, &info, &tick);
      if (sig == SIGHUP) {
        forwardToRouter(sig);
        continue;
      }
      if (sig > 0) {
        stop(sig);
        return absl::OkStatus();
      }
      int internal_port, http_port;
      {
        std::lock_guard<std::mutex> lock(state_.mu);
        if (!state_.fatal.ok()) {
          state_.stopping = true;
          break;
        }
        internal_port = state_.internal_port;
        http_port = state_.http_port;
      }
      if (!workers_started && internal_port > 0) {
        workers_started = true;
        absl::Status status = config_.autoscale ? startAutoscaler(internal_port, http_port)
                                                : startWorkers(internal_port);
        if (!status.ok()) {
          std::lock_guard<std::mutex> lock(state_.mu);
          state_.fatal = status;
          state_.stopping = true;
          break;
        }
      }
    }
    if (autoscaler_ != nullptr) autoscaler_->stopPlanner();
    supervisor_->stopAll(std::chrono::seconds(5));
    autoscaler_.reset();
    return state_.fatal;
  }

 private:
  // the secret goes to the children in their environment only.
  std::vector<std::string> childEnv() const {
    return {absl::StrCat(grpc_util::kClusterSecretEnv, "=", config_.cluster_secret)};
  }

  std::vector<std::string> routerArgv(int http_port, int grpc_port, int internal_port) const {
    std::vector<std::string> argv = {config_.tandem_binary, "router",
                                     "--host", config_.host,
                                     "--http-port", std::to_string(http_port),
                                     "--grpc-port", std::to_string(grpc_port),
                                     "--internal-host", kInternalHost,
                                     "--internal-port", std::to_string(internal_port),
                                     "--model", config_.model};
    argv.insert(argv.end(), config_.router_flags.begin(), config_.router_flags.end());
    return argv;
  }

  std::vector<std::string> workerArgv(const char* role, int index, int router_internal_port) const {
    std::vector<std::string> argv = {config_.tandem_binary, "worker",
                                     "--role", role,
                                     "--model", config_.model,
                                     "--listen", absl::StrCat(kInternalHost, ":0"),
                                     "--router", hostPort(kInternalHost, router_internal_port)};
    argv.insert(argv.end(), config_.worker_flags.begin(), config_.worker_flags.end());
    if (!config_.kv_disk_path.empty()) {
      // two workers must never share a G3 file.
      argv.insert(argv.end(), {"--kv-disk-path",
                               absl::StrCat(config_.kv_disk_path, "/", role, "-", index)});
    }
    return argv;
  }

  absl::Status startWorkers(int router_internal_port) {
    for (int i = 0; i < config_.prefill_workers; ++i) {
      RETURN_IF_ERROR(supervisor_->start({.name = absl::StrCat("prefill-", i),
                                          .argv = workerArgv("prefill", i, router_internal_port),
                                          .extra_env = childEnv()}));
    }
    for (int i = 0; i < config_.decode_workers; ++i) {
      RETURN_IF_ERROR(supervisor_->start({.name = absl::StrCat("decode-", i),
                                          .argv = workerArgv("decode", i, router_internal_port),
                                          .extra_env = childEnv()}));
    }
    return absl::OkStatus();
  }

  absl::Status startAutoscaler(int router_internal_port, int router_http_port) {
    absl::StatusOr<std::unique_ptr<ServeAutoscaler>> autoscaler =
        ServeAutoscaler::start(config_, supervisor_.get(), router_internal_port, router_http_port);
    if (!autoscaler.ok()) return autoscaler.status();
    autoscaler_ = std::move(*autoscaler);
    return absl::OkStatus();
  }

  // on the supervisor's thread.
  void onLine(const std::string& name, absl::string_view line) {
    if (name != kRouter) {
      if (absl::StartsWith(line, "tandem worker: ") && absl::StrContains(line, " serving grpc ")) {
        std::lock_guard<std::mutex> lock(state_.mu);
        state_.came_up.insert(name);
      }
      return;
    }
    if (absl::StartsWith(line, "tandem router: listening on ")) {
      const int http_port = portAfter(line, "://");  // http:// or https://
      const int grpc_port = portAfter(line, "grpc ");
      const int internal_port = portAfter(line, "internal ");
      if (http_port <= 0 || grpc_port <= 0 || internal_port <= 0) return;
      // a restarted router must come back where the workers and clients
      // know it.
      (void)supervisor_->setArgv(kRouter, routerArgv(http_port, grpc_port, internal_port));
      std::lock_guard<std::mutex> lock(state_.mu);
      state_.http_port = http_port;
      state_.grpc_port = grpc_port;
      state_.internal_port = internal_port;
      state_.came_up.insert(name);
      return;
    }
    constexpr absl::string_view kReady = "tandem router: model '";
    size_t on = line.find(" on http://");
    if (on == absl::string_view::npos) on = line.find(" on https://");
    if (!absl::StartsWith(line, kReady) || on == absl::string_view::npos) return;
    std::lock_guard<std::mutex> lock(state_.mu);
    if (state_.ready_printed) return;
    state_.ready_printed = true;
    // "model 'NAME' (context C" of the router's line, our own process
    // count, then its addresses: the same shape as the in-process line.
    absl::string_view head = line.substr(kReady.size() - 7, on - (kReady.size() - 7));
    if (absl::EndsWith(head, ")")) head.remove_suffix(1);
    std::fprintf(stderr, "tandem serve: %.*s, %d prefill + %d decode worker processes)%.*s\n",
                 static_cast<int>(head.size()), head.data(), config_.prefill_workers,
                 config_.decode_workers, static_cast<int>(line.size() - on), line.data() + on);
    std::fflush(stderr);
  }

  // on the supervisor's thread: a child that dies before it ever came up
  // (bad flags, port in use, unreadable model) would only crash-loop.
  void onExit(const std::string& name, process::ExitStatus status) {
    std::lock_guard<std::mutex> lock(state_.mu);
    if (state_.stopping || state_.came_up.count(name) > 0 || !state_.fatal.ok()) return;
    state_.fatal = absl::FailedPreconditionError(
        absl::StrCat("tandem serve: ", name, " exited before it came up (", status.describe(),
                     "); its output is above"));
  }

  // the router re-reads its TLS certificate and API key file on SIGHUP.
  void forwardToRouter(int sig) {
    absl::StatusOr<pid_t> pid = supervisor_->pid(kRouter);
    if (pid.ok() && *pid > 0) {
      kill(*pid, sig);
      std::fprintf(stderr, "tandem serve: SIGHUP passed on to the router\n");
    }
  }

  void stop(int sig) {
    if (autoscaler_ != nullptr) autoscaler_->stopPlanner();
    {
      std::lock_guard<std::mutex> lock(state_.mu);
      state_.stopping = true;
    }
    const auto drain = std::chrono::milliseconds(static_cast<int64_t>(config_.drain_timeout_s * 1000));
    std::fprintf(stderr,
                 "tandem serve: %s, stopping the router (it drains for up to %.0f s), then the "
                 "workers\n",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", config_.drain_timeout_s);
    (void)supervisor_->stop(kRouter, drain + std::chrono::seconds(5));
    supervisor_->stopAll(std::chrono::seconds(10));
    autoscaler_.reset();
    std::fprintf(stderr, "tandem serve: stopped\n");
  }

  const ServeClusterConfig& config_;
  ClusterState state_;
  process::SupervisorPtr supervisor_;
  std::unique_ptr<ServeAutoscaler> autoscaler_;  // with config_.autoscale, once the router is up
};

}  // namespace

absl::Status runServeCluster(const ServeClusterConfig& config, const sigset_t& stop_signals) {
  return ServeCluster(config).run(stop_signals);
}

}  // namespace tandem::cli
