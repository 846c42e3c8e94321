#include "router/openai/responses_output.h"

#include <random>
#include <utility>

#include "absl/strings/str_format.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

std::string dumpJson(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string itemId(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return absl::StrFormat("%s_%016x%016x", prefix, rng(), rng());
}

Json textPart(const std::string& text) {
  return Json{{"type", "output_text"}, {"text", text}, {"annotations", Json::array()},
              {"logprobs", Json::array()}};
}

}  // namespace

ResponsesOutput::ResponsesOutput(const ResponsesRequest& request, std::string id,
                                 int64_t created_at, std::string model, bool stream)
    : request_(request),
      id_(std::move(id)),
      created_at_(created_at),
      model_(std::move(model)),
      stream_(stream) {}

Json ResponsesOutput::response() const {
  Json json;
  json["id"] = id_;
  json["object"] = "response";
  json["created_at"] = created_at_;
  json["status"] = status_;
  json["background"] = false;
  json["error"] = error_;
  json["incomplete_details"] = incomplete_details_;
  json["instructions"] = request_.instructions;
  json["max_output_tokens"] =
      request_.max_output_tokens ? Json(*request_.max_output_tokens) : Json();
  json["model"] = model_;
  json["output"] = output_;
  json["parallel_tool_calls"] = request_.parallel_tool_calls;
  json["previous_response_id"] = nullptr;
  json["reasoning"] = Json{{"effort", nullptr}, {"summary", nullptr}};
  json["store"] = request_.store;
  json["temperature"] = request_.chat.sampling.temperature;
  json["text"] = Json{{"format", request_.text_format}};
  json["tool_choice"] = request_.tool_choice;
  json["tools"] = request_.tools;
  json["top_p"] = request_.chat.sampling.top_p;
  json["truncation"] = "disabled";
  json["usage"] = usage_;
  json["user"] = request_.user;
  json["metadata"] = request_.metadata;
  return json;
}

std::string ResponsesOutput::body() const { return dumpJson(response()); }

std::string ResponsesOutput::event(const char* type, Json fields) {
  if (!stream_) return "";
  Json json;
  json["type"] = type;
  json["sequence_number"] = sequence_++;
  for (auto& [key, value] : fields.items()) json[key] = std::move(value);
  return absl::StrFormat("event: %s\ndata: %s\n\n", type, dumpJson(json));
}

std::string ResponsesOutput::start() {
  std::string out = event("response.created", Json{{"response", response()}});
  out += event("response.in_progress", Json{{"response", response()}});
  return out;
}

std::string ResponsesOutput::openMessage() {
  const int index = static_cast<int>(output_.size());
  Json item = {{"id", itemId("msg")}, {"type", "message"}, {"status", "in_progress"},
               {"role", "assistant"}, {"content", Json::array()}};
  std::string out = event("response.output_item.added", Json{{"output_index", index}, {"item", item}});
  out += event("response.content_part.added",
               Json{{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                    {"part", textPart("")}});
  item["content"].push_back(textPart(""));
  output_.push_back(std::move(item));
  open_ = Open::kMessage;
  return out;
}

std::string ResponsesOutput::openFunctionCall(const ToolCallDelta& delta) {
  const int index = static_cast<int>(output_.size());
  Json item = {{"id", itemId("fc")}, {"type", "function_call"}, {"status", "in_progress"},
               {"call_id", delta.id}, {"name", delta.name}, {"arguments", ""}};
  std::string out = event("response.output_item.added", Json{{"output_index", index}, {"item", item}});
  output_.push_back(std::move(item));
  open_ = Open::kFunctionCall;
  return out;
}

std::string ResponsesOutput::closeOpenItem() {
  if (open_ == Open::kNone) return "";
  const int index = static_cast<int>(output_.size()) - 1;
  Json& item = output_.back();
  item["status"] = status_ == "incomplete" ? "incomplete" : "completed";
  std::string out;
  if (open_ == Open::kMessage) {
    const Json& part = item["content"][0];
    out += event("response.output_text.done",
                 Json{{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                      {"text", part["text"]}, {"logprobs", Json::array()}});
    out += event("response.content_part.done",
                 Json{{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0},
                      {"part", part}});
  } else {
    out += event("response.function_call_arguments.done",
                 Json{{"item_id", item["id"]}, {"output_index", index},
                      {"arguments", item["arguments"]}});
  }
  out += event("response.output_item.done", Json{{"output_index", index}, {"item", item}});
  open_ = Open::kNone;
  return out;
}

std::string ResponsesOutput::add(const ParsedText& parsed) {
  std::string out;
  if (!parsed.content.empty()) {
    if (open_ != Open::kMessage) {
      out += closeOpenItem();
      out += openMessage();
    }
    const int index = static_cast<int>(output_.size()) - 1;
    Json& part = output_.back()["content"][0];
    part["text"] = part["text"].get<std::string>() + parsed.content;
    out += event("response.output_text.delta",
                 Json{{"item_id", output_.back()["id"]}, {"output_index", index},
                      {"content_index", 0}, {"delta", parsed.content}, {"logprobs", Json::array()}});
  }
  for (const ToolCallDelta& delta : parsed.calls) {
    if (!delta.id.empty() || open_ != Open::kFunctionCall) {
      out += closeOpenItem();
      out += openFunctionCall(delta);
    }
    if (delta.arguments.empty()) continue;
    const int index = static_cast<int>(output_.size()) - 1;
    Json& item = output_.back();
    item["arguments"] = item["arguments"].get<std::string>() + delta.arguments;
    out += event("response.function_call_arguments.delta",
                 Json{{"item_id", item["id"]}, {"output_index", index}, {"delta", delta.arguments}});
  }
  return out;
}

std::string ResponsesOutput::finish(bool length, const ResponsesUsage& usage) {
  std::string out;
  // an empty answer is still one (empty) message, as clients expect.
  if (output_.empty()) out += openMessage();
  if (length) {
    status_ = "incomplete";
    incomplete_details_ = Json{{"reason", "max_output_tokens"}};
  } else {
    status_ = "completed";
  }
  out += closeOpenItem();
  usage_ = Json{{"input_tokens", usage.input_tokens},
                {"input_tokens_details", {{"cached_tokens", usage.cached_tokens}}},
                {"output_tokens", usage.output_tokens},
                {"output_tokens_details", {{"reasoning_tokens", 0}}},
                {"total_tokens", usage.input_tokens + usage.output_tokens}};
  out += event(length ? "response.incomplete" : "response.completed",
               Json{{"response", response()}});
  return out;
}

std::string ResponsesOutput::fail(std::string_view message) {
  status_ = "failed";
  error_ = Json{{"code", "server_error"}, {"message", message}};
  return event("response.failed", Json{{"response", response()}});
}

}  // namespace tandem::openai
