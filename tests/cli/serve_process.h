// `tandem serve` (or any long-running tandem command) as a user starts it:
// the real binary on free ports, its output kept, and HTTP requests to it.
// The process is stopped (SIGTERM, then SIGKILL) when the object goes.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/process/child_process.h"
#include "tests/common/http/raw_client.h"

namespace tandem::testing {

// the pid of the child of `parent` whose command line holds `word` (0 when
// none): a process `tandem serve` started.
pid_t childWith(pid_t parent, const std::string& word);

class ServeProcess {
 public:
  // runs `tandem serve --host 127.0.0.1 --http-port 0 --grpc-port 0 ARGS`
  // and waits (up to `timeout`) for its "model ... on http://" line, whose
  // ports it takes. Fails with the output so far when the process exits or
  // the line does not come.
  static absl::StatusOr<std::unique_ptr<ServeProcess>> start(
      const std::vector<std::string>& args,
      std::chrono::milliseconds timeout = std::chrono::seconds(120));
  ~ServeProcess();

  int httpPort() const { return http_port_; }
  int grpcPort() const { return grpc_port_; }
  pid_t pid() const { return child_->pid(); }

  // reads the output until a line from the `from`th on satisfies `match`
  // (true) or `timeout` passes or the process exits (false).
  bool waitForLine(const std::function<bool(const std::string&)>& match,
                   std::chrono::milliseconds timeout = std::chrono::seconds(30), size_t from = 0);
  // every line printed so far (after reading what is pending).
  const std::vector<std::string>& lines();

  // a request with a JSON body (or none for GET) on the HTTP port.
  std::optional<http::testing::RawResponse> post(const std::string& path, const std::string& json);
  std::optional<http::testing::RawResponse> get(const std::string& path);

  // sends `sig` to the serve process (its process group) and waits up to
  // `timeout` for it to exit: its status, or nullopt when it had to be
  // killed.
  std::optional<process::ExitStatus> stop(int sig, std::chrono::milliseconds timeout);

 private:
  explicit ServeProcess(process::ChildProcessPtr child) : child_(std::move(child)) {}
  void readPending();

  process::ChildProcessPtr child_;
  std::vector<std::string> lines_;
  int http_port_ = 0;
  int grpc_port_ = 0;
};

}  // namespace tandem::testing
