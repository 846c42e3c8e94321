#include "router/generate/openai_service.h"

#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "router/openai/openai_request.h"

namespace tandem::router {
namespace {

const std::vector<http::HttpHeader> kJson = {{"Content-Type", "application/json"}};

// compares without an early exit, so the time taken does not tell how much
// of a key was right.
bool constantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? a[i] : 0;
    const unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

}  // namespace

OpenAiService::OpenAiService(ServingMetrics* metrics, OpenAiServiceOptions options)
    : options_(std::move(options)) {
  context_.metrics = metrics;
}

void OpenAiService::setReady(const JobContext& context) {
  context_.model = context.model;
  context_.backend = context.backend;
  context_.live_jobs = &live_jobs_;
  ready_.store(true, std::memory_order_release);
}

void OpenAiService::handle(http::HttpRequest request, http::ResponseWriterPtr writer) {
  const std::string& path = request.path;
  const bool get = request.method == "GET" || request.method == "HEAD";
  const bool post = request.method == "POST";
  if (path == "/live" && get) {
    writer->respond(200, kJson, R"({"status":"ok"})");
    return;
  }
  if (path == "/health" && get) {
    if (draining_ || !ready_.load(std::memory_order_acquire) || !context_.backend->ready()) {
      sendError(writer, openai::errorFor(503, draining_ ? "shutting down" : "not ready"), "health");
    } else {
      writer->respond(200, kJson, R"({"status":"ok"})");
    }
    return;
  }
  if (path == "/metrics" && get) {
    writer->respond(200, {{"Content-Type", "text/plain; version=0.0.4"}},
                    context_.metrics->render());
    return;
  }
  if (path == "/version" && get) {
    writer->respond(200, kJson, R"({"version":"0.1.0"})");
    return;
  }
  const bool known = path == "/v1/models" || path == "/v1/completions" ||
                     path == "/v1/chat/completions" || absl::StartsWith(path, "/v1/models/");
  if (!known) {
    sendError(writer, openai::errorFor(404, absl::StrFormat("no route for %s %s", request.method, path)),
              "unknown");
    return;
  }
  if (!ready_.load(std::memory_order_acquire)) {
    sendError(writer, openai::errorFor(503, "the model is still loading"), "unknown");
    return;
  }
  if (!authorized(request)) {
    sendError(writer, openai::errorFor(401, "a valid API key is required: Authorization: Bearer <key>"),
              "unauthorized");
    return;
  }
  if (path == "/v1/models" && get) {
    openai::ModelCard card{context_.model->name(), 0, context_.model->maxModelLen(),
                           context_.model->path()};
    writer->respond(200, kJson, openai::renderModelList({card}));
    context_.metrics->countRequest("models", 200);
    return;
  }
  if (absl::StartsWith(path, "/v1/models/") && get) {
    if (path.substr(11) != context_.model->name()) {
      sendError(writer, openai::errorFor(404, absl::StrFormat("model '%s' does not exist", path.substr(11)), "model"), "models");
      return;
    }
    nlohmann::json list = nlohmann::json::parse(openai::renderModelList(
        {{context_.model->name(), 0, context_.model->maxModelLen(), context_.model->path()}}));
    writer->respond(200, kJson, list["data"][0].dump());
    return;
  }
  if (post && path == "/v1/completions") {
    generate(request, openai::Endpoint::kCompletions, std::move(writer));
    return;
  }
  if (post && path == "/v1/chat/completions") {
    generate(request, openai::Endpoint::kChatCompletions, std::move(writer));
    return;
  }
  openai::ApiError error = openai::errorFor(405, absl::StrFormat("%s is not allowed on %s", request.method, path));
  sendError(writer, error, "unknown");
}

bool OpenAiService::authorized(const http::HttpRequest& request) const {
  if (options_.api_keys.empty()) return true;
  const std::string auth = request.header("authorization");
  constexpr char kBearer[] = "Bearer ";
  if (!absl::StartsWithIgnoreCase(auth, kBearer)) return false;
  const std::string key = auth.substr(sizeof(kBearer) - 1);
  bool ok = false;
  for (const std::string& k : options_.api_keys) ok |= constantTimeEquals(key, k);
  return ok;
}

void OpenAiService::sendError(const http::ResponseWriterPtr& writer, const openai::ApiError& error,
                              const std::string& endpoint) {
  std::vector<http::HttpHeader> headers = kJson;
  if (error.status == 429) headers.push_back({"Retry-After", "1"});
  if (error.status == 401) headers.push_back({"WWW-Authenticate", "Bearer"});
  writer->respond(error.status, std::move(headers), openai::errorBody(error));
  context_.metrics->countRequest(endpoint, error.status);
}

void OpenAiService::generate(const http::HttpRequest& http_request, openai::Endpoint endpoint,
                             http::ResponseWriterPtr writer) {
  const auto arrival = CompletionJob::Clock::now();
  const std::string label = endpoint == openai::Endpoint::kChatCompletions ? "chat" : "completions";
  if (draining_ || !context_.backend->ready()) {
    sendError(writer, openai::errorFor(503, draining_ ? "the server is shutting down" : "the backend is not ready"), label);
    return;
  }
  if (live_jobs_.load() >= options_.max_pending_requests) {
    context_.metrics->countRejected();
    sendError(writer, openai::errorFor(429, absl::StrFormat(
        "the server is overloaded (%d requests in progress); retry later", live_jobs_.load())), label);
    return;
  }
  openai::ParseResult parsed = openai::parseGenerationRequest(http_request.body, endpoint);
  if (auto* error = std::get_if<openai::ApiError>(&parsed)) {
    sendError(writer, *error, label);
    return;
  }
  openai::GenerationRequest request = std::move(std::get<openai::GenerationRequest>(parsed));
  const ServedModel& model = *context_.model;
  if (request.model != model.name()) {
    sendError(writer, openai::errorFor(404, absl::StrFormat(
        "the model '%s' does not exist; this server serves '%s'", request.model, model.name()), "model"), label);
    return;
  }

  std::vector<TokenizedPrompt> prompts;
  if (endpoint == openai::Endpoint::kChatCompletions) {
    absl::StatusOr<std::vector<int32_t>> tokens = model.chatTokens(request);
    if (!tokens.ok()) {
      sendError(writer, openai::errorFor(400, std::string(tokens.status().message()), "messages"), label);
      return;
    }
    prompts.push_back({std::move(*tokens), ""});
  } else {
    for (const openai::Prompt& p : request.prompts) {
      TokenizedPrompt t{model.promptTokens(p), p.text};
      if (p.is_tokens) t.text = model.tokenizer().decode(p.token_ids, request.skip_special_tokens);
      prompts.push_back(std::move(t));
    }
  }

  // lengths: the prompt and what it asks to generate must fit the context.
  const int max_len = model.maxModelLen();
  const int max_prompt = options_.max_prompt_tokens > 0 ? options_.max_prompt_tokens : max_len;
  int longest = 0;
  for (const TokenizedPrompt& p : prompts) longest = std::max<int>(longest, p.tokens.size());
  if (longest > max_prompt || longest >= max_len) {
    openai::ApiError error = openai::errorFor(400, absl::StrFormat(
        "this model's maximum context length is %d tokens, but the prompt has %d tokens%s",
        max_len, longest, longest > max_prompt && longest < max_len
                              ? absl::StrFormat(" (the server allows at most %d)", max_prompt) : ""),
        endpoint == openai::Endpoint::kChatCompletions ? "messages" : "prompt");
    error.code = "context_length_exceeded";
    sendError(writer, error, label);
    return;
  }
  if (!request.max_tokens_set) {
    const int rest = max_len - longest;
    request.sampling.max_tokens =
        endpoint == openai::Endpoint::kChatCompletions ? rest : std::min(16, rest);
  } else if (longest + request.sampling.max_tokens > max_len) {
    openai::ApiError error = openai::errorFor(400, absl::StrFormat(
        "this model's maximum context length is %d tokens, but %d were requested (%d in the "
        "prompt, %d for the completion); lower max_tokens or shorten the prompt",
        max_len, longest + request.sampling.max_tokens, longest, request.sampling.max_tokens),
        "max_tokens");
    error.code = "context_length_exceeded";
    sendError(writer, error, label);
    return;
  }
  CompletionJob::start(context_, std::move(request), std::move(prompts), std::move(writer), arrival);
}

}  // namespace tandem::router
