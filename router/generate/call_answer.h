// How an OpenAI request answers over HTTP, in one place for OpenAiService,
// CompletionCall and ResponsesCall: the headers of a JSON body and of an SSE
// stream, an error's response (with the headers its status calls for), and
// the cut-off of a streaming client that stopped reading.
#pragma once

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "common/http/http_server.h"
#include "router/generate/call_context.h"
#include "router/generate/call_metrics.h"
#include "router/openai/api_error.h"

namespace tandem::router {

// Content-Type: application/json.
const std::vector<http::HttpHeader>& jsonHeaders();
// Content-Type: text/event-stream, Cache-Control: no-cache.
const std::vector<http::HttpHeader>& sseHeaders();

// answers `error` as an OpenAI error body with its status; a 429 says
// Retry-After (error.retry_after_s, at least 1 s), a 401 WWW-Authenticate:
// Bearer.
void respondError(http::ResponseWriter& writer, const openai::ApiError& error);

// streaming, the call's lock held: when the client left more than
// context.max_stream_backlog_bytes unread (it stopped reading: what is
// queued would only grow), runs `cancel`, ends `metrics` as 499 for
// `endpoint`, counts a slow client, logs it naming `call` and aborts the
// connection; returns true then, false (doing nothing) otherwise.
bool cutOffSlowClient(const CallContext& context, http::ResponseWriter& writer,
                      CallMetrics& metrics, const std::string& endpoint, const std::string& call,
                      absl::FunctionRef<void()> cancel);

}  // namespace tandem::router
