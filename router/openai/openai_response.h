// Builds the JSON of OpenAI responses: whole completions and chat
// completions, their streaming chunks (the text after "data: "), and
// /v1/models. The generation pipeline hands over plain values; this file
// owns every field name and the differences between the two endpoints
// (text vs message/delta, completions-style vs chat-style logprobs).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "router/openai/openai_request.h"

namespace tandem::openai {

struct ResponseMeta {
  std::string id;        // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;   // unix seconds
  std::string model;
  Endpoint endpoint = Endpoint::kCompletions;
};

struct TopLogprob {
  std::string token;  // the token's text (its bytes; may be partial UTF-8)
  float logprob = 0.0f;
};

// the logprob record of one generated token.
struct TokenLogprobEntry {
  std::string token;  // the token's text
  float logprob = 0.0f;
  std::vector<TopLogprob> top;  // most likely first
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
};

// a whole choice (non-streaming).
struct ChoiceResult {
  int index = 0;
  std::string text;
  std::vector<TokenLogprobEntry> logprobs;  // used when the request wanted logprobs
  std::string finish_reason;                // "stop" | "length" | "abort"
  // the stop string or token id that ended it (vLLM's "stop_reason"); "" = null
  std::string stop_reason;
};

// a streaming delta of one choice.
struct ChoiceDelta {
  int index = 0;
  std::string text;
  std::vector<TokenLogprobEntry> logprobs;
  std::string finish_reason;  // "" = null (not finished)
  // chat: the first chunk of each choice carries "role":"assistant".
  bool first = false;
};

// the full response body. `usage` is always included.
std::string renderResponse(const ResponseMeta& meta, const GenerationRequest& request,
                           const std::vector<ChoiceResult>& choices, const Usage& usage);

// one chunk ("object": "text_completion" or "chat.completion.chunk") with
// one choice; `usage` is null unless given (OpenAI sends null on every
// chunk when include_usage is on).
std::string renderChunk(const ResponseMeta& meta, const GenerationRequest& request,
                        const ChoiceDelta& delta);

// the final usage-only chunk of include_usage ("choices": []).
std::string renderUsageChunk(const ResponseMeta& meta, const Usage& usage);

struct ModelCard {
  std::string id;
  int64_t created = 0;
  int max_model_len = 0;
  std::string root;  // the model path
};
// GET /v1/models.
std::string renderModelList(const std::vector<ModelCard>& models);

}  // namespace tandem::openai
