#include "router/openai/request_inputs.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "router/openai/tool_request.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;


// token ids of one prompt: a non-empty array of integers in [0, 2^31).
// Whether they are in the vocabulary is the caller's check.
std::vector<int32_t> readTokenIds(const Json& array, FieldReader& reader) {
  std::vector<int32_t> ids;
  if (array.empty()) {
    reader.fail("prompt", "prompt must not contain an empty list of token ids");
    return ids;
  }
  ids.reserve(array.size());
  for (const Json& item : array) {
    std::optional<int64_t> id = asInteger(item);
    if (!id || *id < 0 || *id > kInt32Max) {
      reader.fail("prompt", absl::StrCat("prompt token ids must be integers in [0, ", kInt32Max,
                                         "], got ", item.dump()));
      return {};
    }
    ids.push_back(static_cast<int32_t>(*id));
  }
  return ids;
}

// one "content" of a message: a string, null, or an array of text parts.
// The parts are kept as sent; the chat template renders them.
void checkContent(const Json& content, size_t index, FieldReader& reader) {
  if (content.is_null() || content.is_string()) return;
  std::string where = absl::StrCat("messages[", index, "].content");
  if (!content.is_array()) {
    reader.fail("messages", absl::StrCat(where, " must be a string, an array of content parts, "
                                                "or null, got ", content.type_name()));
    return;
  }
  for (size_t j = 0; j < content.size(); ++j) {
    const Json& part = content[j];
    std::string part_where = absl::StrCat(where, "[", j, "]");
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      reader.fail("messages", absl::StrCat(part_where, " must be an object with a string \"type\""));
      return;
    }
    const std::string& type = part["type"].get_ref<const std::string&>();
    if (type != "text") {
      // the models served are text-only
      reader.fail("messages", absl::StrCat(part_where, ": content parts of type '", type,
                                           "' are not supported, only 'text'"));
      return;
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      reader.fail("messages", absl::StrCat(part_where, ".text must be a string"));
      return;
    }
  }
}

}  // namespace

// "prompt": string | [string] | [int] | [[int]].
void readPrompts(FieldReader& reader, GenerationRequest& request) {
  static constexpr std::string_view kShape =
      "prompt must be a string, an array of strings, an array of token ids, or an array of "
      "arrays of token ids";
  const Json* prompt = reader.find("prompt");
  if (prompt == nullptr) {
    reader.fail("prompt", "prompt is required");
    return;
  }
  if (prompt->is_string()) {
    request.prompts.push_back(Prompt{.text = prompt->get<std::string>()});
    return;
  }
  if (!prompt->is_array()) {
    reader.fail("prompt", std::string(kShape));
    return;
  }
  if (prompt->empty()) {
    reader.fail("prompt", "prompt must not be an empty array");
    return;
  }
  const Json& first = prompt->front();
  if (first.is_number()) {
    // one prompt given as token ids
    request.prompts.push_back(Prompt{.token_ids = readTokenIds(*prompt, reader), .is_tokens = true});
    return;
  }
  if (prompt->size() > static_cast<size_t>(GenerationRequest::kMaxPrompts)) {
    reader.fail("prompt", absl::StrCat("prompt may hold at most ", GenerationRequest::kMaxPrompts,
                                       " prompts, got ", prompt->size()));
    return;
  }
  request.prompts.reserve(prompt->size());
  for (const Json& item : *prompt) {
    if (first.is_string() && item.is_string()) {
      request.prompts.push_back(Prompt{.text = item.get<std::string>()});
    } else if (first.is_array() && item.is_array()) {
      request.prompts.push_back(Prompt{.token_ids = readTokenIds(item, reader), .is_tokens = true});
    } else {
      // mixed kinds, or a kind that is no prompt
      reader.fail("prompt", std::string(kShape));
    }
    if (reader.failed()) return;
  }
}

// "messages": a non-empty array of objects, each with a string "role".
void checkMessages(FieldReader& reader) {
  const Json* messages = reader.find("messages");
  if (messages == nullptr) {
    reader.fail("messages", "messages is required");
    return;
  }
  if (!messages->is_array() || messages->empty()) {
    reader.fail("messages", "messages must be a non-empty array of message objects");
    return;
  }
  if (messages->size() > static_cast<size_t>(GenerationRequest::kMaxMessages)) {
    reader.fail("messages", absl::StrCat("messages may hold at most ", GenerationRequest::kMaxMessages,
                                         " messages, got ", messages->size()));
    return;
  }
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& message = (*messages)[i];
    if (!message.is_object()) {
      reader.fail("messages", absl::StrCat("messages[", i, "] must be an object, got ",
                                           message.type_name()));
      return;
    }
    auto role = message.find("role");
    if (role == message.end() || !role->is_string()) {
      reader.fail("messages", absl::StrCat("messages[", i, "].role must be a string"));
      return;
    }
    auto content = message.find("content");
    if (content != message.end()) checkContent(*content, i, reader);
    if (reader.failed()) return;
  }
}

// the chat template's inputs besides the messages (the JSON ones are
// checked here and moved into the request by takeTemplateInputs).
void readTemplateFields(FieldReader& reader, GenerationRequest& request) {
  const Json* tools = reader.find("tools");
  checkTools(tools != nullptr ? *tools : Json(), reader);
  if (reader.failed()) return;
  request.tool_choice = readToolChoice(reader.find("tool_choice"), tools != nullptr ? *tools : Json(),
                                       reader);
  reader.readObject("chat_template_kwargs");
  std::optional<bool> add_generation_prompt = reader.readBool("add_generation_prompt");
  std::optional<bool> continue_final_message = reader.readBool("continue_final_message");
  if (add_generation_prompt.value_or(false) && continue_final_message.value_or(false)) {
    reader.fail("continue_final_message",
                "continue_final_message and add_generation_prompt cannot both be true");
    return;
  }
  request.continue_final_message = continue_final_message.value_or(false);
  // continuing the last message means not opening a new one, so an unsent
  // add_generation_prompt follows continue_final_message instead of its
  // default (true).
  request.add_generation_prompt =
      add_generation_prompt.value_or(!request.continue_final_message);
}

// moves the template's JSON inputs, checked already, out of the body:
// conversations can be long, and nothing reads the body afterwards.
void takeTemplateInputs(Json& body, GenerationRequest& request) {
  request.messages = std::move(body["messages"]);
  parseToolCallArguments(request.messages);
  // tool_choice "none": the tools are not shown to the model (as vLLM does),
  // so it does not try to call them.
  if (auto tools = body.find("tools");
      tools != body.end() && tools->is_array() && request.tool_choice.parsesCalls()) {
    request.tools = std::move(*tools);
  }
  if (auto kwargs = body.find("chat_template_kwargs"); kwargs != body.end() && kwargs->is_object()) {
    request.chat_template_kwargs = std::move(*kwargs);
  }
}

}  // namespace tandem::openai
