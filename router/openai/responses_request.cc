#include "router/openai/responses_request.h"

#include <limits>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "router/openai/json_field.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

// fields that mean the same on chat and are handed over as they are.
constexpr const char* kSameOnChat[] = {
    "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
    "frequency_penalty", "seed", "stop", "logit_bias", "stream", "user"};

// one content of an input message as chat content: a string, or text parts.
Json inputContent(const Json& content, const std::string& where, FieldReader& reader) {
  if (content.is_string()) return content;
  if (!content.is_array()) {
    reader.fail("input", absl::StrCat(where, " must be a string or an array of content parts"));
    return Json();
  }
  Json parts = Json::array();
  for (size_t j = 0; j < content.size(); ++j) {
    const Json& part = content[j];
    const std::string part_where = absl::StrCat(where, "[", j, "]");
    auto type = part.is_object() ? part.find("type") : Json::const_iterator();
    if (!part.is_object() || type == part.end() || !type->is_string()) {
      reader.fail("input", absl::StrCat(part_where, " must be an object with a string \"type\""));
      return Json();
    }
    if (*type != "input_text" && *type != "output_text") {
      // the models served are text-only
      reader.fail("input", absl::StrCat(part_where, ": content parts of type '",
                                        type->get<std::string>(),
                                        "' are not supported, only 'input_text' and 'output_text'"));
      return Json();
    }
    auto text = part.find("text");
    if (text == part.end() || !text->is_string()) {
      reader.fail("input", absl::StrCat(part_where, ".text must be a string"));
      return Json();
    }
    parts.push_back(Json{{"type", "text"}, {"text", *text}});
  }
  return parts;
}

// a string field of an input item, or "" after recording a 400.
std::string itemString(const Json& item, const char* key, const std::string& where,
                       FieldReader& reader) {
  auto value = item.find(key);
  if (value == item.end() || !value->is_string()) {
    reader.fail("input", absl::StrCat(where, ".", key, " must be a string"));
    return "";
  }
  return value->get<std::string>();
}

// "input" (and "instructions" in front) as chat messages.
Json inputMessages(FieldReader& reader) {
  Json messages = Json::array();
  if (std::optional<std::string> instructions = reader.readString("instructions")) {
    messages.push_back(Json{{"role", "system"}, {"content", *instructions}});
  }
  const Json* input = reader.find("input");
  if (input == nullptr) {
    reader.fail("input", "input is required");
    return messages;
  }
  if (input->is_string()) {
    messages.push_back(Json{{"role", "user"}, {"content", *input}});
    return messages;
  }
  if (!input->is_array() || input->empty()) {
    reader.fail("input", "input must be a string or a non-empty array of input items");
    return messages;
  }
  if (input->size() > static_cast<size_t>(GenerationRequest::kMaxMessages)) {
    reader.fail("input", absl::StrCat("input may hold at most ", GenerationRequest::kMaxMessages,
                                      " items, got ", input->size()));
    return messages;
  }
  for (size_t i = 0; i < input->size() && !reader.failed(); ++i) {
    const Json& item = (*input)[i];
    const std::string where = absl::StrCat("input[", i, "]");
    if (!item.is_object()) {
      reader.fail("input", absl::StrCat(where, " must be an object"));
      break;
    }
    auto type_it = item.find("type");
    const std::string type =
        type_it != item.end() && type_it->is_string() ? type_it->get<std::string>() : "message";
    if (type == "message") {
      const std::string role = itemString(item, "role", where, reader);
      if (reader.failed()) break;
      if (role != "user" && role != "assistant" && role != "system" && role != "developer") {
        reader.fail("input", absl::StrCat(where, ".role must be one of user, assistant, system, "
                                                 "developer, got '", role, "'"));
        break;
      }
      auto content = item.find("content");
      if (content == item.end()) {
        reader.fail("input", absl::StrCat(where, ".content is required"));
        break;
      }
      Json chat_content = inputContent(*content, where + ".content", reader);
      // chat templates know system, not developer (OpenAI's newer name for it).
      messages.push_back(Json{{"role", role == "developer" ? "system" : role},
                              {"content", std::move(chat_content)}});
    } else if (type == "function_call") {
      // a call the model made earlier: an assistant turn with tool_calls
      // (calls in a row share one turn).
      const std::string call_id = itemString(item, "call_id", where, reader);
      const std::string name = itemString(item, "name", where, reader);
      const std::string arguments = itemString(item, "arguments", where, reader);
      if (reader.failed()) break;
      Json call = {{"id", call_id}, {"type", "function"},
                   {"function", {{"name", name}, {"arguments", arguments}}}};
      if (!messages.empty() && messages.back()["role"] == "assistant" &&
          messages.back().contains("tool_calls")) {
        messages.back()["tool_calls"].push_back(std::move(call));
      } else {
        messages.push_back(Json{{"role", "assistant"}, {"content", ""},
                                {"tool_calls", Json::array({std::move(call)})}});
      }
    } else if (type == "function_call_output") {
      const std::string call_id = itemString(item, "call_id", where, reader);
      const std::string output = itemString(item, "output", where, reader);
      if (reader.failed()) break;
      messages.push_back(Json{{"role", "tool"}, {"tool_call_id", call_id}, {"content", output}});
    } else {
      reader.fail("input", absl::StrCat(where, ": input items of type '", type,
                                        "' are not supported (message, function_call and "
                                        "function_call_output are)"));
    }
  }
  return messages;
}

// Responses-shape function tools as chat tools.
Json chatTools(const Json& tools, FieldReader& reader) {
  if (!tools.is_array()) {
    reader.fail("tools", absl::StrCat("tools must be an array, got ", tools.type_name()));
    return Json();
  }
  Json chat = Json::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& tool = tools[i];
    auto type = tool.is_object() ? tool.find("type") : Json::const_iterator();
    if (!tool.is_object() || type == tool.end() || !type->is_string()) {
      reader.fail("tools", absl::StrCat("tools[", i, "] must be an object with a string \"type\""));
      return Json();
    }
    if (*type != "function") {
      reader.fail("tools", absl::StrCat("tools[", i, "]: tools of type '", type->get<std::string>(),
                                        "' are not supported, only 'function'"));
      return Json();
    }
    Json function = Json::object();
    for (const char* key : {"name", "description", "parameters", "strict"}) {
      if (auto it = tool.find(key); it != tool.end()) function[key] = *it;
    }
    chat.push_back(Json{{"type", "function"}, {"function", std::move(function)}});
  }
  return chat;
}

// "tool_choice": the same strings as chat; a function as {"type":
// "function", "name": ...}.
Json chatToolChoice(const Json& choice, FieldReader& reader) {
  if (choice.is_string()) return choice;
  if (choice.is_object()) {
    auto type = choice.find("type");
    auto name = choice.find("name");
    if (type != choice.end() && *type == "function" && name != choice.end() && name->is_string()) {
      return Json{{"type", "function"}, {"function", {{"name", *name}}}};
    }
  }
  reader.fail("tool_choice", "tool_choice must be \"none\", \"auto\", \"required\" or "
                             "{\"type\": \"function\", \"name\": ...}");
  return Json();
}

// fields that need a stored response.
void refuseUnsupported(FieldReader& reader) {
  if (reader.find("previous_response_id") != nullptr) {
    reader.fail("previous_response_id",
                "previous_response_id is not supported: this server does not store responses "
                "(store is accepted, nothing is kept); send the whole conversation in input");
  }
  if (reader.find("conversation") != nullptr) {
    reader.fail("conversation",
                "conversation is not supported: this server does not store conversations; send "
                "the whole conversation in input");
  }
  if (reader.readBool("background").value_or(false)) {
    reader.fail("background", "background responses are not supported: this server does not "
                              "store responses");
  }
}

// text.format (Responses' flat shape: {"type": "json_schema", "name", "schema",
// "strict"}) as chat's response_format ({"type": "json_schema", "json_schema":
// {...}}); nothing for "text". *echo is the format as the response shows it.
std::optional<Json> chatResponseFormat(const Json& format, FieldReader& reader, Json* echo) {
  FieldReader inner(format, "text.format.");
  std::optional<std::string> type = inner.readString("type");
  std::optional<Json> out;
  if (!inner.failed() && !type) {
    inner.fail("type", "text.format.type is required");
  } else if (type == "json_object") {
    out = Json{{"type", "json_object"}};
    *echo = *out;
  } else if (type == "json_schema") {
    Json schema = Json::object();
    *echo = Json{{"type", "json_schema"}};
    for (const char* key : {"description", "name", "schema", "strict"}) {
      if (const Json* v = inner.find(key)) {
        schema[key] = *v;
        (*echo)[key] = *v;
      }
    }
    out = Json{{"type", "json_schema"}, {"json_schema", std::move(schema)}};
  } else if (type && *type != "text") {
    inner.fail("type", absl::StrCat("text.format.type must be text, json_object or json_schema, got '",
                                    *type, "'"));
  }
  reader.absorb(inner);
  return out;
}

// a chat request's error, in the Responses request's words.
ApiError inResponsesTerms(ApiError error) {
  if (error.param == "messages") error.param = "input";
  if (absl::StartsWith(error.param, "response_format.")) {
    std::string rest = error.param.substr(std::string_view("response_format.").size());
    if (absl::StartsWith(rest, "json_schema.")) rest = rest.substr(std::string_view("json_schema.").size());
    error.param = "text.format." + rest;
    error.message = absl::StrReplaceAll(error.message, {{"response_format.json_schema.", "text.format."},
                                                        {"response_format", "text.format"}});
  }
  if (error.param == "max_tokens" || error.param == "max_completion_tokens") {
    error.param = "max_output_tokens";
    error.message = absl::StrReplaceAll(error.message, {{"max_completion_tokens", "max_output_tokens"},
                                                        {"max_tokens", "max_output_tokens"}});
  }
  return error;
}

}  // namespace

ResponsesParseResult parseResponsesRequest(std::string_view body) {
  std::variant<Json, ApiError> parsed = parseJsonObject(body);
  if (auto* error = std::get_if<ApiError>(&parsed)) return std::move(*error);
  const Json json = std::get<Json>(std::move(parsed));

  ResponsesRequest request;
  FieldReader reader(json);
  refuseUnsupported(reader);
  Json chat = Json::object();
  if (const Json* model = reader.find("model")) chat["model"] = *model;
  chat["messages"] = inputMessages(reader);
  if (const Json* instructions = reader.find("instructions")) request.instructions = *instructions;
  if (const Json* tools = reader.find("tools")) {
    chat["tools"] = chatTools(*tools, reader);
    request.tools = *tools;
  }
  if (const Json* choice = reader.find("tool_choice")) {
    chat["tool_choice"] = chatToolChoice(*choice, reader);
    request.tool_choice = *choice;
  }
  if (const Json* text = reader.readObject("text")) {
    FieldReader nested(*text, "text.");
    if (const Json* format = nested.readObject("format")) {
      if (std::optional<Json> rf = chatResponseFormat(*format, nested, &request.text_format)) {
        chat["response_format"] = *std::move(rf);
      }
    }
    reader.absorb(nested);
  }
  if (std::optional<int64_t> max_output =
          reader.readInt("max_output_tokens", 1, std::numeric_limits<int32_t>::max())) {
    request.max_output_tokens = static_cast<int>(*max_output);
    chat["max_completion_tokens"] = *max_output;
  }
  request.store = reader.readBool("store").value_or(true);
  request.parallel_tool_calls = reader.readBool("parallel_tool_calls").value_or(true);
  if (const Json* metadata = reader.readObject("metadata")) request.metadata = *metadata;
  if (const Json* user = reader.find("user")) request.user = *user;
  if (std::optional<std::string> truncation = reader.readString("truncation");
      truncation && *truncation != "auto" && *truncation != "disabled") {
    reader.fail("truncation", "truncation must be \"auto\" or \"disabled\"");
  }
  if (reader.failed()) return reader.error();
  for (const char* key : kSameOnChat) {
    if (auto it = json.find(key); it != json.end()) chat[key] = *it;
  }

  ParseResult result = parseGenerationRequest(
      chat.dump(-1, ' ', false, Json::error_handler_t::replace), Endpoint::kChatCompletions);
  if (auto* error = std::get_if<ApiError>(&result)) return inResponsesTerms(std::move(*error));
  request.chat = std::get<GenerationRequest>(std::move(result));
  return request;
}

}  // namespace tandem::openai
