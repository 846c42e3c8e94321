// `tandem worker drain [--address 127.0.0.1:9090] [--timeout 90] [--min-wait 2]`:
// the preStop hook of a worker pod. It asks the worker on its own pod
// (POST /drain on the worker's metrics port; loopback peers only) to leave
// routing, then waits until nothing runs there any more, and at least
// --min-wait seconds so every router has polled the worker and seen it go.
// Exits 0 once drained, 1 when --timeout passed first (Kubernetes then sends
// SIGTERM anyway and the worker's own --drain-timeout applies).
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "common/host_port.h"
#include "common/http/http_client.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace tandem::cli {
namespace {

struct DrainArgs {
  std::string address = "127.0.0.1:9090";
  double timeout_s = 90;
  double min_wait_s = 2;
};

struct DrainState {
  bool draining = false;
  int in_flight = 0;
};

// one request to the worker's /drain, bounded by `timeout`.
absl::StatusOr<DrainState> callDrain(const HostPort& at, const std::string& method,
                                     std::chrono::milliseconds timeout) {
  const std::string host = at.host.find(':') != std::string::npos ? absl::StrCat("[", at.host, "]") : at.host;
  ASSIGN_OR_RETURN(http::HttpReply reply,
                   http::httpCall({.method = method,
                                   .url = absl::StrCat("http://", host, ":", at.port, "/drain"),
                                   .timeout = timeout},
                                  http::systemResolve));
  if (reply.status != 200) {
    return absl::FailedPreconditionError(
        absl::StrCat("/drain: HTTP ", reply.status, ": ", reply.body.substr(0, 200)));
  }
  auto body = nlohmann::json::parse(reply.body, nullptr, false);
  if (!body.is_object() || !body.contains("draining") || !body["draining"].is_boolean() ||
      !body.contains("in_flight") || !body["in_flight"].is_number_integer()) {
    return absl::InternalError(absl::StrCat("/drain: unexpected answer ", reply.body.substr(0, 200)));
  }
  return DrainState{body["draining"].get<bool>(), body["in_flight"].get<int>()};
}

absl::Status runDrain(const DrainArgs& args) {
  ASSIGN_OR_RETURN(HostPort at, parseHostPort(args.address));
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  const auto min_end = start + std::chrono::milliseconds(static_cast<int64_t>(args.min_wait_s * 1000));
  ASSIGN_OR_RETURN(DrainState state, callDrain(at, "POST", std::chrono::seconds(10)));
  std::fprintf(stderr, "tandem worker drain: %s draining, %d in flight\n", args.address.c_str(),
               state.in_flight);
  while (state.in_flight > 0 || std::chrono::steady_clock::now() < min_end) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "still ", state.in_flight, " in flight after ", args.timeout_s, " s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSIGN_OR_RETURN(state, callDrain(at, "GET", std::chrono::seconds(10)));
  }
  std::fprintf(stderr, "tandem worker drain: drained\n");
  return absl::OkStatus();
}

}  // namespace

void registerWorkerDrainCommand(CLI::App* worker) {
  auto args = std::make_shared<DrainArgs>();
  CLI::App* cmd = worker->add_subcommand(
      "drain", "take the worker on this pod out of routing and wait until it is idle (preStop)");
  cmd->add_option("--address", args->address,
                  "HOST:PORT of the worker's metrics port (its /drain answers loopback only)")
      ->capture_default_str();
  cmd->add_option("--timeout", args->timeout_s, "seconds to wait for the requests in flight")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--min-wait", args->min_wait_s,
                  "seconds to wait at least, so every router has seen the worker leave")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  setAction(cmd, [args] { return runDrain(*args); });
}

}  // namespace tandem::cli
