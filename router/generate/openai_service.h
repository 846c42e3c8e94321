// The router's HTTP API: OpenAI's /v1/completions, /v1/chat/completions and
// /v1/models, plus /health (503 until the generator is ready), /live,
// /metrics (Prometheus) and /version, dispatched by a route table (method +
// path → handler): an unknown path is a 404, a known path with another
// method a 405. Generation requests pass the Admission (API keys, 429 with
// Retry-After beyond max_pending_requests, the model, prompt limits), then
// a CompletionCall answers them.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/http/http_server.h"
#include "router/generate/admission.h"
#include "router/generate/call_context.h"
#include "router/openai/api_error.h"
#include "router/openai/openai_request.h"

namespace tandem::router {

struct OpenAiServiceOptions {
  // accepted keys; empty = no authentication.
  std::vector<std::string> api_keys;
  // generation requests being answered at once; more get 429.
  int max_pending_requests = 1024;
  // most prompt tokens (0 = the model's context length).
  int max_prompt_tokens = 0;
  // CallContext::max_stream_backlog_bytes: a streaming client leaving more
  // unread is cut off (its generation cancelled).
  size_t max_stream_backlog_bytes = size_t{4} << 20;
};

class OpenAiService {
 public:
  // answers /live, /health (503) and /metrics at once, and everything else
  // 503 until setReady(). `metrics` must outlive the service.
  OpenAiService(ServingMetrics* metrics, OpenAiServiceOptions options);

  // the model is loaded: serve it. `context`'s members must outlive the
  // service and every call it started. call once.
  void setReady(const CallContext& context);

  // the HTTP handler (runs on an I/O thread, never blocks).
  void handle(http::HttpRequest request, http::ResponseWriterPtr writer);
  http::HttpHandler handler() {
    return [this](http::HttpRequest r, http::ResponseWriterPtr w) { handle(std::move(r), std::move(w)); };
  }

  // from now on /health answers 503 and new generations 503 (draining).
  void setDraining();
  // generation requests being answered.
  int pending() const;

 private:
  struct Route;
  static const std::vector<Route>& routes();

  // the routes' handlers.
  void live(const http::HttpRequest& request, http::ResponseWriterPtr writer);
  void health(const http::HttpRequest& request, http::ResponseWriterPtr writer);
  void metrics(const http::HttpRequest& request, http::ResponseWriterPtr writer);
  void version(const http::HttpRequest& request, http::ResponseWriterPtr writer);
  void listModels(const http::HttpRequest& request, http::ResponseWriterPtr writer);
  void getModel(const http::HttpRequest& request, http::ResponseWriterPtr writer);
  void completions(const http::HttpRequest& request, http::ResponseWriterPtr writer);
  void chatCompletions(const http::HttpRequest& request, http::ResponseWriterPtr writer);

  void generate(const http::HttpRequest& request, openai::Endpoint endpoint,
                http::ResponseWriterPtr writer);
  void sendError(const http::ResponseWriterPtr& writer, const openai::ApiError& error,
                 const std::string& endpoint);
  bool ready() const { return ready_.load(std::memory_order_acquire); }

  ServingMetrics* const metrics_;
  const OpenAiServiceOptions options_;
  CallContext context_;                    // written once, before ready_
  std::unique_ptr<Admission> admission_;   // written once, before ready_
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
};

}  // namespace tandem::router
