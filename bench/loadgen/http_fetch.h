// Small blocking HTTP helpers for what a benchmark asks a server outside
// the timed run: the model list (GET /v1/models) and Prometheus metrics
// (GET /metrics). Also the URL parsing shared with the streaming client.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/statusor.h"

namespace tandem::bench {

struct HttpEndpoint {
  std::string host;
  std::string port;
  // a path prefix before /v1/... ("" or e.g. "/openai"), no trailing '/'.
  std::string base_path;
};

// "http://host[:port][/prefix]" (port 80 by default). https is refused:
// the benchmark measures servers, not TLS.
absl::StatusOr<HttpEndpoint> parseHttpUrl(const std::string& url);

// GET base_path + path; the body of a 200 answer, Unavailable when the
// server cannot be reached, Internal naming the status otherwise.
absl::StatusOr<std::string> httpGet(const HttpEndpoint& endpoint, const std::string& path,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(10));

// the id of the first model GET /v1/models lists.
absl::StatusOr<std::string> firstModelId(const HttpEndpoint& endpoint);

}  // namespace tandem::bench
