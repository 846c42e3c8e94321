#include "router/generate/tokenize_handler.h"

#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "generation/request_limits.h"
#include "router/openai/tokenize_request.h"

namespace tandem::router {
namespace {

// the same refusal as a generation request naming another model gets.
std::optional<openai::ApiError> checkModel(const ServedModel& model, const std::string& name) {
  if (name.empty() || name == model.name()) return std::nullopt;
  return openai::errorFor(404,
                          absl::StrFormat("the model '%s' does not exist; this server serves '%s'",
                                          name, model.name()),
                          "model");
}

}  // namespace

std::variant<std::string, openai::ApiError> answerTokenize(const ServedModel& model,
                                                           std::string_view body) {
  auto parsed = openai::parseTokenizeRequest(body);
  if (auto* error = std::get_if<openai::ApiError>(&parsed)) return std::move(*error);
  openai::TokenizeRequest& request = std::get<openai::TokenizeRequest>(parsed);
  if (auto error = checkModel(model, request.model)) return std::move(*error);
  std::vector<int32_t> tokens;
  if (request.chat) {
    absl::StatusOr<std::vector<int32_t>> rendered = model.chatTokens(request.chat_request);
    if (!rendered.ok()) {
      return openai::errorFor(400, std::string(rendered.status().message()), "messages");
    }
    tokens = std::move(*rendered);
  } else {
    tokens = model.tokenizer().encode(request.prompt, request.add_special_tokens);
  }
  std::vector<std::string> strs;
  if (request.return_token_strs) {
    strs.reserve(tokens.size());
    for (int32_t id : tokens) strs.push_back(model.tokenizer().tokenBytes(id));
  }
  return openai::renderTokenizeResponse(tokens, model.maxModelLen(),
                                        request.return_token_strs ? &strs : nullptr);
}

std::variant<std::string, openai::ApiError> answerDetokenize(const ServedModel& model,
                                                             std::string_view body) {
  auto parsed = openai::parseDetokenizeRequest(body);
  if (auto* error = std::get_if<openai::ApiError>(&parsed)) return std::move(*error);
  const openai::DetokenizeRequest& request = std::get<openai::DetokenizeRequest>(parsed);
  if (auto error = checkModel(model, request.model)) return std::move(*error);
  const generation::RequestLimits vocabulary{.vocab_size = model.tokenizer().vocabSize()};
  if (absl::Status s = generation::checkTokenIds(vocabulary, request.tokens, "detokenize");
      !s.ok()) {
    return openai::errorFor(400, std::string(s.message()), "tokens");
  }
  return openai::renderDetokenizeResponse(
      model.tokenizer().decode(request.tokens, /*skip_special=*/false));
}

}  // namespace tandem::router
