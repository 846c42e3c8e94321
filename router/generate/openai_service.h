// The router's HTTP API: OpenAI's /v1/completions, /v1/chat/completions,
// /v1/responses and /v1/models (and /v1/models/{id}), vLLM's /tokenize and
// /detokenize, plus /health (503 until the generator is ready), /live,
// /metrics (Prometheus) and /version, dispatched by a route table (method +
// path → handler): an unknown path is a 404, a known path with another
// method a 405. Generation requests pass the Admission the server shares
// with its gRPC front end (API keys, 429 with Retry-After when its budget is
// spent, the model, request size and prompt limits), then a CompletionCall
// answers them. The I/O thread only reserves a slot: the body is parsed,
// rendered and tokenized on the admission's preparing threads.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "common/http/http_server.h"
#include "router/generate/access_log.h"
#include "router/generate/admission.h"
#include "router/generate/call_context.h"
#include "router/generate/completion_call.h"
#include "router/openai/api_error.h"
#include "router/openai/openai_request.h"

namespace tandem::router {

class OpenAiService {
 public:
  // answers /live, /health (503) and /metrics at once, and everything else
  // 503 until setReady(). `metrics` must outlive the service.
  explicit OpenAiService(ServingMetrics* metrics);

  // the model is loaded: serve admission->context() through `admission`,
  // which must outlive the service and every call it started, and be
  // stopped (Admission::stop) before the service goes. call once.
  void setReady(Admission* admission);

  // the HTTP handler (runs on an I/O thread, never blocks).
  void handle(http::HttpRequest request, http::ResponseWriterPtr writer);
  http::HttpHandler handler() {
    return [this](http::HttpRequest r, http::ResponseWriterPtr w) { handle(std::move(r), std::move(w)); };
  }

  // from now on /health answers 503 and new generations 503 (draining).
  void setDraining();

  // every request gets a RequestRecord (its id held for a crash report,
  // X-Request-Id in its answer) whose line goes to `log` (null: no access
  // log). Call before the first request.
  void setAccessLog(AccessLogPtr log) { access_log_ = std::move(log); }

 private:
  struct Route;
  static const std::vector<Route>& routes();

  // the routes' handlers.
  void live(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void health(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void metrics(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void version(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void listModels(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void getModel(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void completions(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void chatCompletions(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void responses(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void tokenize(http::HttpRequest& request, http::ResponseWriterPtr writer);
  void detokenize(http::HttpRequest& request, http::ResponseWriterPtr writer);

  // what a preparing thread does with a request's body, holding its slot.
  using Prepare = absl::AnyInvocable<void(const std::string& body, AdmissionSlot slot,
                                          http::ResponseWriterPtr writer,
                                          CompletionCall::Clock::time_point arrival)>;
  // on the I/O thread: reserves a slot (capacity first: an overloaded
  // server does not parse bodies) and runs `prepare` on a preparing thread;
  // refusals are answered and counted under `label`.
  void offloadPrepare(http::HttpRequest& request, const std::string& label,
                      http::ResponseWriterPtr writer, Prepare prepare);
  // on a preparing thread: parses a Responses request, admits its chat
  // request and starts a ResponsesCall.
  void prepareResponse(const std::string& body, AdmissionSlot slot,
                       http::ResponseWriterPtr writer, CompletionCall::Clock::time_point arrival);

  // on the I/O thread: reserves a slot and hands the body to a preparing
  // thread.
  void generate(http::HttpRequest& request, openai::Endpoint endpoint,
                http::ResponseWriterPtr writer);
  // on a preparing thread: parses, admits and starts the call.
  void prepareAndStart(const std::string& body, openai::Endpoint endpoint, AdmissionSlot slot,
                       http::ResponseWriterPtr writer, CompletionCall::Clock::time_point arrival);
  void sendError(const http::ResponseWriterPtr& writer, const openai::ApiError& error,
                 const std::string& endpoint);
  bool ready() const { return ready_.load(std::memory_order_acquire); }

  ServingMetrics* const metrics_;
  AccessLogPtr access_log_;
  CallContext context_;            // written once, before ready_
  Admission* admission_ = nullptr;  // written once, before ready_
  std::atomic<bool> ready_{false};
  std::atomic<bool> draining_{false};
};

}  // namespace tandem::router
