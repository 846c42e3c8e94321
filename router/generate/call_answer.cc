#include "router/generate/call_answer.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace tandem::router {

const std::vector<http::HttpHeader>& jsonHeaders() {
  static const std::vector<http::HttpHeader> headers = {{"Content-Type", "application/json"}};
  return headers;
}

const std::vector<http::HttpHeader>& sseHeaders() {
  static const std::vector<http::HttpHeader> headers = {{"Content-Type", "text/event-stream"},
                                                        {"Cache-Control", "no-cache"}};
  return headers;
}

void respondError(http::ResponseWriter& writer, const openai::ApiError& error) {
  std::vector<http::HttpHeader> headers = jsonHeaders();
  if (error.status == 429) {
    headers.push_back({"Retry-After", std::to_string(std::max<int64_t>(1, error.retry_after_s))});
  }
  if (error.status == 401) headers.push_back({"WWW-Authenticate", "Bearer"});
  writer.respond(error.status, std::move(headers), openai::errorBody(error));
}

bool cutOffSlowClient(const CallContext& context, http::ResponseWriter& writer,
                      CallMetrics& metrics, const std::string& endpoint, const std::string& call,
                      absl::FunctionRef<void()> cancel) {
  const size_t backlog = writer.pendingBytes();
  if (backlog <= context.max_stream_backlog_bytes) return false;
  cancel();
  metrics.end(endpoint, 499);
  if (context.metrics != nullptr) context.metrics->countSlowClient();
  std::fprintf(stderr, "tandem router: %s: the client left %zu bytes unread; cancelled and closed\n",
               call.c_str(), backlog);
  writer.abort();
  return true;
}

}  // namespace tandem::router
