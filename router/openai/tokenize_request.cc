#include "router/openai/tokenize_request.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "router/openai/json_field.h"
#include "router/openai/request_inputs.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

std::string readModel(FieldReader& reader) {
  return reader.readString("model").value_or("");
}

}  // namespace

std::variant<TokenizeRequest, ApiError> parseTokenizeRequest(std::string_view body) {
  std::variant<Json, ApiError> parsed = parseJsonObject(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return std::move(*error);
  Json json = std::get<Json>(std::move(parsed));
  TokenizeRequest request;
  FieldReader reader(json);
  request.model = readModel(reader);
  request.return_token_strs = reader.readBool("return_token_strs").value_or(false);
  const bool has_prompt = reader.find("prompt") != nullptr;
  const bool has_messages = reader.find("messages") != nullptr;
  if (has_prompt == has_messages) {
    reader.fail(has_prompt ? "messages" : "prompt",
                "give either prompt (a string) or messages (a chat), not both nor neither");
  } else if (has_prompt) {
    if (std::optional<std::string> prompt = reader.readString("prompt")) {
      request.prompt = std::move(*prompt);
    }
    request.add_special_tokens = reader.readBool("add_special_tokens").value_or(true);
  } else {
    request.chat = true;
    request.chat_request.endpoint = Endpoint::kChatCompletions;
    checkMessages(reader);
    readTemplateFields(reader, request.chat_request);
  }
  if (reader.failed()) return reader.error();
  if (request.chat) {
    request.chat_request.model = request.model;
    takeTemplateInputs(json, request.chat_request);
  }
  return request;
}

std::variant<DetokenizeRequest, ApiError> parseDetokenizeRequest(std::string_view body) {
  std::variant<Json, ApiError> parsed = parseJsonObject(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return std::move(*error);
  const Json json = std::get<Json>(std::move(parsed));
  DetokenizeRequest request;
  FieldReader reader(json);
  request.model = readModel(reader);
  const Json* tokens = reader.readArray("tokens");
  if (tokens == nullptr && !reader.failed()) reader.fail("tokens", "tokens is required");
  if (tokens != nullptr) {
    request.tokens.reserve(tokens->size());
    for (const Json& item : *tokens) {
      std::optional<int64_t> id = asInteger(item);
      if (!id || *id < 0 || *id > std::numeric_limits<int32_t>::max()) {
        reader.fail("tokens", absl::StrCat("tokens must be token ids (integers >= 0), got ",
                                           item.dump()));
        break;
      }
      request.tokens.push_back(static_cast<int32_t>(*id));
    }
  }
  if (reader.failed()) return reader.error();
  return request;
}

std::string renderTokenizeResponse(const std::vector<int32_t>& tokens, int max_model_len,
                                   const std::vector<std::string>* token_strs) {
  Json json;
  json["count"] = tokens.size();
  json["max_model_len"] = max_model_len;
  json["tokens"] = tokens;
  json["token_strs"] = token_strs != nullptr ? Json(*token_strs) : Json();
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string renderDetokenizeResponse(const std::string& prompt) {
  Json json;
  json["prompt"] = prompt;
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace tandem::openai
