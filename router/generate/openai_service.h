// The router's HTTP API: OpenAI's /v1/completions, /v1/chat/completions and
// /v1/models, plus /health (503 until the backend is ready), /live,
// /metrics (Prometheus) and /version. Checks API keys (Bearer, constant
// time), applies admission control (429 with Retry-After beyond
// max_pending_requests) and prompt limits, then hands each generation to a
// CompletionJob.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/http/http_server.h"
#include "router/generate/completion_job.h"

namespace tandem::router {

struct OpenAiServiceOptions {
  // accepted keys; empty = no authentication.
  std::vector<std::string> api_keys;
  // generation requests being answered at once; more get 429.
  int max_pending_requests = 1024;
  // most prompt tokens (0 = the model's context length).
  int max_prompt_tokens = 0;
};

class OpenAiService {
 public:
  // answers /live, /health (503) and /metrics at once, and everything else
  // 503 until setReady(). `metrics` must outlive the service.
  OpenAiService(ServingMetrics* metrics, OpenAiServiceOptions options);

  // the model is loaded: serve it. `context`'s members must outlive the
  // service. call once.
  void setReady(const JobContext& context);

  // the HTTP handler (runs on an I/O thread, never blocks).
  void handle(http::HttpRequest request, http::ResponseWriterPtr writer);
  http::HttpHandler handler() {
    return [this](http::HttpRequest r, http::ResponseWriterPtr w) { handle(std::move(r), std::move(w)); };
  }

  // from now on /health answers 503 and new generations 503 (draining).
  void setDraining() { draining_ = true; }
  // generation requests being answered.
  int pending() const { return live_jobs_.load(); }

 private:
  void generate(const http::HttpRequest& request, openai::Endpoint endpoint,
                http::ResponseWriterPtr writer);
  bool authorized(const http::HttpRequest& request) const;
  void sendError(const http::ResponseWriterPtr& writer, const openai::ApiError& error,
                 const std::string& endpoint);

  JobContext context_;
  OpenAiServiceOptions options_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
  std::atomic<int> live_jobs_{0};
};

}  // namespace tandem::router
