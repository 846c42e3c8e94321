#include "router/openai/openai_response.h"

#include <charconv>

#include "nlohmann/json.hpp"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

// token texts may end inside a UTF-8 character; JSON text must be valid
// UTF-8, so such bytes print as U+FFFD (chat logprobs carry the raw bytes).
std::string dumpJson(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Json nullIfEmpty(const std::string& text) { return text.empty() ? Json() : Json(text); }

// a logprob as JSON: the float's shortest decimal spelling (so -0.25f
// prints as -0.25, not -0.25000000372529), and -inf, which JSON cannot
// spell, as -9999.0 like OpenAI and vLLM.
double logprobValue(float logprob) {
  if (!(logprob >= -9999.0f)) return -9999.0;  // -inf, and NaN with it
  char buffer[32];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), logprob);
  double value = logprob;
  if (ec == std::errc()) std::from_chars(buffer, end, value);
  return value;
}

Json tokenBytes(const std::string& token) {
  Json bytes = Json::array();
  for (char c : token) bytes.push_back(static_cast<unsigned char>(c));
  return bytes;
}

// the legacy completions shape: parallel arrays, top logprobs as objects
// keyed by token text (a repeated text keeps its first place and last
// value, as a Python dict does).
Json completionLogprobs(const std::vector<TokenLogprobEntry>& entries, int text_offset) {
  Json tokens = Json::array(), token_logprobs = Json::array();
  Json top_logprobs = Json::array(), text_offsets = Json::array();
  int64_t offset = text_offset;
  for (const TokenLogprobEntry& entry : entries) {
    tokens.push_back(entry.token);
    if (entry.unscored) {
      token_logprobs.push_back(nullptr);
      top_logprobs.push_back(nullptr);
    } else {
      token_logprobs.push_back(logprobValue(entry.logprob));
      Json top = Json::object();
      for (const TopLogprob& candidate : entry.top) top[candidate.token] = logprobValue(candidate.logprob);
      top_logprobs.push_back(std::move(top));
    }
    text_offsets.push_back(offset);
    offset += static_cast<int64_t>(entry.token.size());
  }
  Json logprobs;
  logprobs["tokens"] = std::move(tokens);
  logprobs["token_logprobs"] = std::move(token_logprobs);
  logprobs["top_logprobs"] = std::move(top_logprobs);
  logprobs["text_offset"] = std::move(text_offsets);
  return logprobs;
}

// the chat shape: one record per token, with its raw bytes.
Json chatLogprobs(const std::vector<TokenLogprobEntry>& entries) {
  Json content = Json::array();
  for (const TokenLogprobEntry& entry : entries) {
    Json top = Json::array();
    for (const TopLogprob& candidate : entry.top) {
      Json item;
      item["token"] = candidate.token;
      item["logprob"] = logprobValue(candidate.logprob);
      item["bytes"] = tokenBytes(candidate.token);
      top.push_back(std::move(item));
    }
    Json record;
    record["token"] = entry.token;
    record["logprob"] = logprobValue(entry.logprob);
    record["bytes"] = tokenBytes(entry.token);
    record["top_logprobs"] = std::move(top);
    content.push_back(std::move(record));
  }
  Json logprobs;
  logprobs["content"] = std::move(content);
  return logprobs;
}

Json logprobsJson(Endpoint endpoint, const std::vector<TokenLogprobEntry>& entries,
                  int text_offset) {
  return endpoint == Endpoint::kCompletions ? completionLogprobs(entries, text_offset)
                                            : chatLogprobs(entries);
}

// vLLM's shape: [null, {"<token id>": {"logprob", "rank", "decoded_token"}}, ...].
Json promptLogprobsJson(const PromptLogprobs& prompt) {
  Json out = Json::array();
  for (const std::vector<PromptCandidate>& position : prompt) {
    if (position.empty()) {
      out.push_back(nullptr);
      continue;
    }
    Json record = Json::object();
    for (const PromptCandidate& c : position) {
      record[std::to_string(c.token_id)] =
          Json{{"logprob", logprobValue(c.logprob)}, {"rank", c.rank}, {"decoded_token", c.text}};
    }
    out.push_back(std::move(record));
  }
  return out;
}

Json usageJson(const Usage& usage) {
  Json json;
  json["prompt_tokens"] = usage.prompt_tokens;
  json["completion_tokens"] = usage.completion_tokens;
  json["total_tokens"] = usage.prompt_tokens + usage.completion_tokens;
  json["prompt_tokens_details"]["cached_tokens"] = usage.cached_tokens;
  return json;
}

Json toolCallsJson(const std::vector<ToolCall>& calls) {
  Json json = Json::array();
  for (const ToolCall& call : calls) {
    Json item;
    item["id"] = call.id;
    item["type"] = "function";
    item["function"]["name"] = call.name;
    item["function"]["arguments"] = call.arguments;
    json.push_back(std::move(item));
  }
  return json;
}

// OpenAI's streamed tool-call pieces: the first of a call has its id, type
// and name (and the arguments so far), later ones only more arguments.
Json toolCallDeltasJson(const std::vector<ToolCallDelta>& deltas) {
  Json json = Json::array();
  for (const ToolCallDelta& delta : deltas) {
    Json item;
    item["index"] = delta.index;
    if (!delta.id.empty()) {
      item["id"] = delta.id;
      item["type"] = "function";
      item["function"]["name"] = delta.name;
    }
    item["function"]["arguments"] = delta.arguments;
    json.push_back(std::move(item));
  }
  return json;
}

// the fields every response and chunk starts with.
Json envelope(const ResponseMeta& meta, bool chunk) {
  Json json;
  json["id"] = meta.id;
  if (meta.endpoint == Endpoint::kCompletions) {
    json["object"] = "text_completion";
  } else {
    json["object"] = chunk ? "chat.completion.chunk" : "chat.completion";
  }
  json["created"] = meta.created;
  json["model"] = meta.model;
  return json;
}

}  // namespace

std::string renderResponse(const ResponseMeta& meta, const GenerationRequest& request,
                           const std::vector<ChoiceResult>& choices, const Usage& usage) {
  Json json = envelope(meta, /*chunk=*/false);
  Json rendered = Json::array();
  for (const ChoiceResult& result : choices) {
    Json choice;
    choice["index"] = result.index;
    if (meta.endpoint == Endpoint::kCompletions) {
      choice["text"] = result.text;
    } else {
      choice["message"]["role"] = "assistant";
      const bool calls = !result.tool_calls.empty();
      choice["message"]["content"] = calls && result.text.empty() ? Json() : Json(result.text);
      if (calls) choice["message"]["tool_calls"] = toolCallsJson(result.tool_calls);
    }
    choice["logprobs"] = request.want_logprobs
                             ? logprobsJson(meta.endpoint, result.logprobs,
                                            result.logprobs_text_offset)
                             : Json();
    choice["finish_reason"] = nullIfEmpty(result.finish_reason);
    choice["stop_reason"] = nullIfEmpty(result.stop_reason);
    if (request.prompt_logprobs && meta.endpoint == Endpoint::kCompletions) {
      choice["prompt_logprobs"] = promptLogprobsJson(result.prompt_logprobs);
    }
    rendered.push_back(std::move(choice));
  }
  json["choices"] = std::move(rendered);
  // chat: one prompt, on the response (as vLLM).
  if (request.prompt_logprobs && meta.endpoint == Endpoint::kChatCompletions) {
    json["prompt_logprobs"] =
        choices.empty() ? Json() : promptLogprobsJson(choices.front().prompt_logprobs);
  }
  json["usage"] = usageJson(usage);
  return dumpJson(json);
}

std::string renderChunk(const ResponseMeta& meta, const GenerationRequest& request,
                        const ChoiceDelta& delta) {
  Json json = envelope(meta, /*chunk=*/true);
  Json choice;
  choice["index"] = delta.index;
  bool finished = !delta.finish_reason.empty();
  if (meta.endpoint == Endpoint::kCompletions) {
    choice["text"] = delta.text;
  } else {
    Json message = Json::object();
    const bool calls = !delta.tool_calls.empty();
    if (delta.first) message["role"] = "assistant";
    // the closing chunk of a choice carries no text: OpenAI sends "delta": {}
    if (!delta.text.empty() || (delta.first && !calls) || (!finished && !calls)) {
      message["content"] = delta.text;
    }
    if (calls) message["tool_calls"] = toolCallDeltasJson(delta.tool_calls);
    choice["delta"] = std::move(message);
  }
  // a chunk without tokens (the role chunk, a bare finish) has null logprobs
  choice["logprobs"] = request.want_logprobs && !delta.logprobs.empty()
                           ? logprobsJson(meta.endpoint, delta.logprobs,
                                          delta.logprobs_text_offset)
                           : Json();
  choice["finish_reason"] = nullIfEmpty(delta.finish_reason);
  choice["stop_reason"] = nullIfEmpty(delta.stop_reason);
  json["choices"] = Json::array({std::move(choice)});
  // with include_usage every chunk says "usage": null and a last chunk
  // (renderUsageChunk) carries the numbers; without it the key is absent.
  if (request.include_usage) json["usage"] = nullptr;
  return dumpJson(json);
}

std::string renderUsageChunk(const ResponseMeta& meta, const Usage& usage) {
  Json json = envelope(meta, /*chunk=*/true);
  json["choices"] = Json::array();
  json["usage"] = usageJson(usage);
  return dumpJson(json);
}

std::string renderModelList(const std::vector<ModelCard>& models) {
  Json data = Json::array();
  for (const ModelCard& model : models) {
    Json card;
    card["id"] = model.id;
    card["object"] = "model";
    card["created"] = model.created;
    card["owned_by"] = "tandem";
    card["root"] = model.id;
    card["max_model_len"] = model.max_model_len;
    data.push_back(std::move(card));
  }
  Json json;
  json["object"] = "list";
  json["data"] = std::move(data);
  return dumpJson(json);
}

}  // namespace tandem::openai
