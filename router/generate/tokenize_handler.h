// The answers of POST /tokenize and POST /detokenize (vLLM's shapes, see
// router/openai/tokenize_request.h) for the served model: a prompt through
// the tokenizer, messages through the chat template and the tokenizer
// (exactly the ids a chat request's prompt gets), ids back to text (special
// tokens written out, as vLLM does). Run on a preparing thread.
#pragma once

#include <string>
#include <string_view>
#include <variant>

#include "router/generate/served_model.h"
#include "router/openai/api_error.h"

namespace tandem::router {

// the response body, or the error: 400 for a bad body, a template refusal
// or ids outside the vocabulary; 404 for another model than `model`'s.
std::variant<std::string, openai::ApiError> answerTokenize(const ServedModel& model,
                                                           std::string_view body);
std::variant<std::string, openai::ApiError> answerDetokenize(const ServedModel& model,
                                                             std::string_view body);

}  // namespace tandem::router
