// The router's access log: one line per request it answers, over HTTP and
// gRPC, success or error — when it came, from whom, what API and model,
// the status (HTTP status or gRPC code), prompt and output tokens, time to
// first token, duration, and its request id (the one the crash report and
// the X-Request-Id response header name). Text ("key=value" after the time)
// or JSON (one object a line). Lines are written whole (one write(2) each,
// under a lock), so concurrent requests never interleave; a write that fails
// (disk full) drops the line, never the request.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace tandem::router {

struct AccessEntry {
  std::chrono::system_clock::time_point time;  // when the request came in
  std::string peer;                             // "ip:port" (gRPC: its peer URI)
  std::string protocol;                         // "http" | "grpc"
  std::string api;                              // "/v1/completions", "/tandem.v1.Inference/Generate"
  std::string model;                            // "" = none
  int status = 0;                               // HTTP status or gRPC code
  int prompt_tokens = -1;                       // -1 = none
  int output_tokens = -1;
  std::optional<double> ttft_ms;
  double duration_ms = 0;
  std::string request_id;
};

class AccessLog {
 public:
  enum class Format { kText, kJson };

  // `target`: "off" (nullptr), "stderr", or a file opened for appending
  // (created 0644). InvalidArgument for an unknown format name elsewhere;
  // the file's open error here.
  static absl::StatusOr<std::shared_ptr<AccessLog>> open(const std::string& target, Format format);
  // "text" | "json".
  static absl::StatusOr<Format> parseFormat(const std::string& name);
  ~AccessLog();

  void write(const AccessEntry& entry);

  // one line, with its '\n'.
  static std::string formatText(const AccessEntry& entry);
  static std::string formatJson(const AccessEntry& entry);

 private:
  AccessLog(int fd, bool owned, Format format) : fd_(fd), owned_(owned), format_(format) {}

  const int fd_;
  const bool owned_;
  const Format format_;
  std::mutex mu_;
};
using AccessLogPtr = std::shared_ptr<AccessLog>;

}  // namespace tandem::router
