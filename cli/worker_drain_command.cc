// `tandem worker drain [--address 127.0.0.1:9090] [--timeout 90] [--min-wait 2]`:
// the preStop hook of a worker pod. It asks the worker on its own pod
// (POST /drain on the worker's metrics port; loopback peers only) to leave
// routing, then waits until nothing runs there any more, and at least
// --min-wait seconds so every router has polled the worker and seen it go.
// Exits 0 once drained, 1 when --timeout passed first (Kubernetes then sends
// SIGTERM anyway and the worker's own --drain-timeout applies).
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "common/host_port.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace tandem::cli {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;

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
absl::StatusOr<DrainState> callDrain(const HostPort& at, beast::http::verb verb,
                                     std::chrono::milliseconds timeout) {
  net::io_context ioc;
  net::ip::tcp::resolver resolver(ioc);
  beast::tcp_stream stream(ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(at.host, std::to_string(at.port), ec);
  if (ec) return absl::UnavailableError(absl::StrCat("resolve ", at.host, ": ", ec.message()));
  beast::http::request<beast::http::empty_body> req{verb, "/drain", 11};
  req.set(beast::http::field::host, at.host);
  beast::http::response<beast::http::string_body> res;
  beast::flat_buffer buffer;
  std::string failed;
  stream.expires_after(timeout);
  stream.async_connect(endpoints, [&](beast::error_code e, const auto&) {
    if (e) { failed = "connect: " + e.message(); return; }
    beast::http::async_write(stream, req, [&](beast::error_code e2, size_t) {
      if (e2) { failed = "write: " + e2.message(); return; }
      beast::http::async_read(stream, buffer, res, [&](beast::error_code e3, size_t) {
        if (e3) failed = "read: " + e3.message();
      });
    });
  });
  ioc.run();
  if (!failed.empty()) return absl::UnavailableError(absl::StrCat("/drain: ", failed));
  if (res.result_int() != 200) {
    return absl::FailedPreconditionError(
        absl::StrCat("/drain: HTTP ", res.result_int(), ": ", res.body().substr(0, 200)));
  }
  auto body = nlohmann::json::parse(res.body(), nullptr, false);
  if (!body.is_object() || !body.contains("draining") || !body["draining"].is_boolean() ||
      !body.contains("in_flight") || !body["in_flight"].is_number_integer()) {
    return absl::InternalError(absl::StrCat("/drain: unexpected answer ", res.body().substr(0, 200)));
  }
  return DrainState{body["draining"].get<bool>(), body["in_flight"].get<int>()};
}

absl::Status runDrain(const DrainArgs& args) {
  ASSIGN_OR_RETURN(HostPort at, parseHostPort(args.address));
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(static_cast<int64_t>(args.timeout_s * 1000));
  const auto min_end = start + std::chrono::milliseconds(static_cast<int64_t>(args.min_wait_s * 1000));
  ASSIGN_OR_RETURN(DrainState state, callDrain(at, beast::http::verb::post, std::chrono::seconds(10)));
  std::fprintf(stderr, "tandem worker drain: %s draining, %d in flight\n", args.address.c_str(),
               state.in_flight);
  while (state.in_flight > 0 || std::chrono::steady_clock::now() < min_end) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "still ", state.in_flight, " in flight after ", args.timeout_s, " s"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSIGN_OR_RETURN(state, callDrain(at, beast::http::verb::get, std::chrono::seconds(10)));
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
