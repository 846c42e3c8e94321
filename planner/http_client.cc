#include "planner/http_client.h"

#include "planner/host_resolver.h"

namespace tandem::planner {

absl::StatusOr<HttpReply> httpCall(const HttpCall& call) {
  return http::httpCall(call, [](const std::string& host, int port, std::chrono::milliseconds timeout) {
    return resolveHost(host, port, timeout);
  });
}

}  // namespace tandem::planner
