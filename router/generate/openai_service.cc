#include "router/generate/openai_service.h"

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "absl/strings/str_format.h"
#include "router/generate/admission_api_error.h"
#include "router/generate/call_answer.h"
#include "router/generate/recorded_response_writer.h"
#include "router/generate/responses_call.h"
#include "router/generate/tokenize_handler.h"
#include "router/openai/openai_response.h"
#include "router/openai/responses_request.h"

namespace tandem::router {
namespace {

enum class Method { kGet, kPost };  // kGet also takes HEAD

bool methodMatches(Method method, const std::string& name) {
  return method == Method::kGet ? name == "GET" || name == "HEAD" : name == "POST";
}

}  // namespace

struct OpenAiService::Route {
  Method method;
  std::string_view path;
  bool prefix;  // matches every path under `path`
  // an API route: 503 until ready, 401 without a valid key, 405 for
  // another method. The others (probes, metrics) answer at once and know
  // no other method (404).
  bool api;
  void (OpenAiService::*handle)(http::HttpRequest&, http::ResponseWriterPtr);

  bool pathMatches(const std::string& p) const {
    return prefix ? p.compare(0, path.size(), path) == 0 : p == path;
  }
};

const std::vector<OpenAiService::Route>& OpenAiService::routes() {
  static const std::vector<Route> kRoutes = {
      {Method::kGet, "/live", false, false, &OpenAiService::live},
      {Method::kGet, "/health", false, false, &OpenAiService::health},
      {Method::kGet, "/metrics", false, false, &OpenAiService::metrics},
      {Method::kGet, "/version", false, false, &OpenAiService::version},
      {Method::kGet, "/v1/models", false, true, &OpenAiService::listModels},
      {Method::kGet, "/v1/models/", true, true, &OpenAiService::getModel},
      {Method::kPost, "/v1/completions", false, true, &OpenAiService::completions},
      {Method::kPost, "/v1/chat/completions", false, true, &OpenAiService::chatCompletions},
      {Method::kPost, "/v1/responses", false, true, &OpenAiService::responses},
      {Method::kPost, "/tokenize", false, true, &OpenAiService::tokenize},
      {Method::kPost, "/detokenize", false, true, &OpenAiService::detokenize},
  };
  return kRoutes;
}

OpenAiService::OpenAiService(ServingMetrics* metrics) : metrics_(metrics) {
  context_.metrics = metrics;
}

void OpenAiService::setReady(Admission* admission) {
  context_ = admission->context();
  admission_ = admission;
  if (draining_) admission_->setDraining();
  ready_.store(true, std::memory_order_release);
}

void OpenAiService::setDraining() {
  draining_ = true;
  if (ready()) admission_->setDraining();
}

void OpenAiService::handle(http::HttpRequest request, http::ResponseWriterPtr writer) {
  auto record = std::make_shared<RequestRecord>(access_log_, "http", request.path,
                                                request.remote_address,
                                                requestIdFor(request.header("x-request-id")));
  writer = std::make_shared<RecordedResponseWriter>(std::move(writer), record);
  const Route* route = nullptr;
  bool api_path = false;  // an API route has this path, with another method
  for (const Route& r : routes()) {
    if (!r.pathMatches(request.path)) continue;
    if (methodMatches(r.method, request.method)) {
      route = &r;
      break;
    }
    api_path |= r.api;
  }
  if (route == nullptr && !api_path) {
    sendError(writer, openai::errorFor(404, absl::StrFormat("no route for %s %s", request.method,
                                                            request.path)),
              "unknown");
    return;
  }
  if (route == nullptr || route->api) {
    if (ready()) record->setModel(context_.model->name());
    if (!ready()) {
      sendError(writer, openai::errorFor(503, "the model is still loading"), "unknown");
      return;
    }
    if (auto error = admission_->checkCredentials(request.header("authorization"))) {
      sendError(writer, toApiError(*error), "unauthorized");
      return;
    }
  }
  if (route == nullptr) {
    sendError(writer, openai::errorFor(405, absl::StrFormat("%s is not allowed on %s",
                                                            request.method, request.path)),
              "unknown");
    return;
  }
  (this->*route->handle)(request, std::move(writer));
}

void OpenAiService::live(http::HttpRequest&, http::ResponseWriterPtr writer) {
  writer->respond(200, jsonHeaders(), R"({"status":"ok"})");
}

void OpenAiService::health(http::HttpRequest&, http::ResponseWriterPtr writer) {
  if (draining_ || !ready() || !context_.generator->ready()) {
    sendError(writer, openai::errorFor(503, draining_ ? "shutting down" : "not ready"), "health");
  } else {
    writer->respond(200, jsonHeaders(), R"({"status":"ok"})");
  }
}

void OpenAiService::metrics(http::HttpRequest&, http::ResponseWriterPtr writer) {
  writer->respond(200, {{"Content-Type", "text/plain; version=0.0.4"}}, metrics_->render());
}

void OpenAiService::version(http::HttpRequest&, http::ResponseWriterPtr writer) {
  writer->respond(200, jsonHeaders(), R"({"version":"0.1.0"})");
}

void OpenAiService::listModels(http::HttpRequest&, http::ResponseWriterPtr writer) {
  const ServedModel& model = *context_.model;
  openai::ModelCard card{model.name(), 0, model.maxModelLen()};
  writer->respond(200, jsonHeaders(), openai::renderModelList({card}));
  metrics_->countRequest("models", 200);
}

void OpenAiService::getModel(http::HttpRequest& request, http::ResponseWriterPtr writer) {
  const ServedModel& model = *context_.model;
  const std::string name = request.path.substr(std::string_view("/v1/models/").size());
  if (name != model.name()) {
    sendError(writer, openai::errorFor(404, absl::StrFormat("model '%s' does not exist", name),
                                       "model"),
              "models");
    return;
  }
  nlohmann::json list = nlohmann::json::parse(
      openai::renderModelList({{model.name(), 0, model.maxModelLen()}}));
  writer->respond(200, jsonHeaders(), list["data"][0].dump());
  metrics_->countRequest("models", 200);
}

void OpenAiService::completions(http::HttpRequest& request, http::ResponseWriterPtr writer) {
  generate(request, openai::Endpoint::kCompletions, std::move(writer));
}

void OpenAiService::chatCompletions(http::HttpRequest& request,
                                    http::ResponseWriterPtr writer) {
  generate(request, openai::Endpoint::kChatCompletions, std::move(writer));
}

void OpenAiService::sendError(const http::ResponseWriterPtr& writer, const openai::ApiError& error,
                              const std::string& endpoint) {
  respondError(*writer, error);
  metrics_->countRequest(endpoint, error.status);
}

void OpenAiService::offloadPrepare(http::HttpRequest& http_request, const std::string& label,
                                   http::ResponseWriterPtr writer, Prepare prepare) {
  const auto arrival = CompletionCall::Clock::now();
  // capacity first: an overloaded server does not parse bodies.
  std::variant<AdmissionSlot, AdmissionError> slot =
      admission_->reserve(http_request.header("authorization"));
  if (auto* error = std::get_if<AdmissionError>(&slot)) {
    sendError(writer, toApiError(*error), label);
    return;
  }
  // parsing, rendering and tokenizing are the body's size in CPU: they run
  // on a preparing thread, so the I/O threads go on serving, and a large
  // body on the large lane, so small ones never wait behind it.
  const size_t body_bytes = http_request.body.size();
  std::optional<AdmissionError> refused = admission_->offload(
      [body = std::move(http_request.body), writer, prepare = std::move(prepare),
       slot = std::move(std::get<AdmissionSlot>(slot)), arrival]() mutable {
        prepare(body, std::move(slot), std::move(writer), arrival);
      },
      body_bytes);
  if (refused) sendError(writer, toApiError(*refused), label);
}

void OpenAiService::generate(http::HttpRequest& http_request, openai::Endpoint endpoint,
                             http::ResponseWriterPtr writer) {
  offloadPrepare(http_request, openai::endpointLabel(endpoint), std::move(writer),
                 [this, endpoint](const std::string& body, AdmissionSlot slot,
                                  http::ResponseWriterPtr w, CompletionCall::Clock::time_point at) {
                   prepareAndStart(body, endpoint, std::move(slot), std::move(w), at);
                 });
}

void OpenAiService::responses(http::HttpRequest& request, http::ResponseWriterPtr writer) {
  offloadPrepare(request, "responses", std::move(writer),
                 [this](const std::string& body, AdmissionSlot slot, http::ResponseWriterPtr w,
                        CompletionCall::Clock::time_point at) {
                   prepareResponse(body, std::move(slot), std::move(w), at);
                 });
}

void OpenAiService::prepareResponse(const std::string& body, AdmissionSlot slot,
                                    http::ResponseWriterPtr writer,
                                    CompletionCall::Clock::time_point arrival) {
  if (writer->closed()) {
    metrics_->countRequest("responses", 499);
    return;
  }
  openai::ResponsesParseResult parsed = openai::parseResponsesRequest(body);
  if (auto* error = std::get_if<openai::ApiError>(&parsed)) {
    sendError(writer, *error, "responses");
    return;
  }
  openai::ResponsesRequest request = std::move(std::get<openai::ResponsesRequest>(parsed));
  auto prompts = admission_->admit(slot, request.chat);
  if (auto* error = std::get_if<AdmissionError>(&prompts)) {
    openai::ApiError api = toApiError(*error);
    // the admission names chat's fields; the client sent Responses ones.
    if (api.param == "messages") api.param = "input";
    if (api.param == "max_tokens") api.param = "max_output_tokens";
    sendError(writer, api, "responses");
    return;
  }
  ResponsesCall::start(*admission_, std::move(slot), std::move(request),
                       std::move(std::get<std::vector<TokenizedPrompt>>(prompts)),
                       std::move(writer), arrival);
}

void OpenAiService::tokenize(http::HttpRequest& request, http::ResponseWriterPtr writer) {
  offloadPrepare(request, "tokenize", std::move(writer),
                 [this](const std::string& body, AdmissionSlot, http::ResponseWriterPtr w,
                        CompletionCall::Clock::time_point) {
                   auto answer = answerTokenize(*context_.model, body);
                   if (auto* error = std::get_if<openai::ApiError>(&answer)) {
                     sendError(w, *error, "tokenize");
                     return;
                   }
                   w->respond(200, jsonHeaders(), std::get<std::string>(answer));
                   metrics_->countRequest("tokenize", 200);
                 });
}

void OpenAiService::detokenize(http::HttpRequest& request, http::ResponseWriterPtr writer) {
  offloadPrepare(request, "detokenize", std::move(writer),
                 [this](const std::string& body, AdmissionSlot, http::ResponseWriterPtr w,
                        CompletionCall::Clock::time_point) {
                   auto answer = answerDetokenize(*context_.model, body);
                   if (auto* error = std::get_if<openai::ApiError>(&answer)) {
                     sendError(w, *error, "detokenize");
                     return;
                   }
                   w->respond(200, jsonHeaders(), std::get<std::string>(answer));
                   metrics_->countRequest("detokenize", 200);
                 });
}

void OpenAiService::prepareAndStart(const std::string& body, openai::Endpoint endpoint,
                                    AdmissionSlot slot, http::ResponseWriterPtr writer,
                                    CompletionCall::Clock::time_point arrival) {
  const std::string label = openai::endpointLabel(endpoint);
  if (writer->closed()) {
    // the client left while the request waited: 499, nginx's "client
    // closed request", as for a call it leaves.
    metrics_->countRequest(label, 499);
    return;
  }
  openai::ParseResult parsed = openai::parseGenerationRequest(body, endpoint);
  if (auto* error = std::get_if<openai::ApiError>(&parsed)) {
    sendError(writer, *error, label);
    return;
  }
  openai::GenerationRequest request = std::move(std::get<openai::GenerationRequest>(parsed));
  auto prompts = admission_->admit(slot, request);
  if (auto* error = std::get_if<AdmissionError>(&prompts)) {
    sendError(writer, toApiError(*error), label);
    return;
  }
  CompletionCall::start(*admission_, std::move(slot), std::move(request),
                        std::move(std::get<std::vector<TokenizedPrompt>>(prompts)),
                        std::move(writer), arrival);
}

}  // namespace tandem::router
