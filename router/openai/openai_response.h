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
#include "router/openai/tool_call_parser.h"

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

// the logprob record of one token: generated, or (echo) of the prompt.
struct TokenLogprobEntry {
  std::string token;  // the token's text
  float logprob = 0.0f;
  std::vector<TopLogprob> top;  // most likely first
  // the prompt's first token: no context, so its logprob and top logprobs
  // render as null.
  bool unscored = false;
};

// one candidate of a vLLM prompt_logprobs record.
struct PromptCandidate {
  int32_t token_id = 0;
  std::string text;  // "decoded_token"
  float logprob = 0.0f;
  int rank = 0;
};
// vLLM's "prompt_logprobs": per prompt token, null for the first (empty
// here), else its token and the most likely ones at its position, keyed by
// token id (a token among the top ones appears once).
using PromptLogprobs = std::vector<std::vector<PromptCandidate>>;

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
  int cached_tokens = 0;
};

// a whole choice (non-streaming).
struct ChoiceResult {
  int index = 0;
  // rendered as is: with echo, the caller has put the prompt in front.
  std::string text;
  std::vector<TokenLogprobEntry> logprobs;  // used when the request wanted logprobs
  std::string finish_reason;  // "stop" | "length" | "tool_calls" | "abort"
  // the stop string or token id that ended it (vLLM's "stop_reason"); "" = null
  std::string stop_reason;
  // chat: the tool calls parsed from the output; with calls and no text,
  // "content" is null.
  std::vector<ToolCall> tool_calls;
  // completions logprobs: where the first token of `logprobs` starts in
  // `text`, in bytes (0 without echo, and with echo when the prompt's tokens
  // lead `logprobs`). Each later token's "text_offset" adds the byte length
  // of the ones before it.
  int logprobs_text_offset = 0;
  // with request.prompt_logprobs (completions: on the choice; chat: the
  // first choice's, on the response).
  PromptLogprobs prompt_logprobs;
};

// a streaming delta of one choice.
struct ChoiceDelta {
  int index = 0;
  std::string text;
  std::vector<TokenLogprobEntry> logprobs;
  std::string finish_reason;  // "" = null (not finished)
  // chat: the first chunk of each choice carries "role":"assistant".
  bool first = false;
  // set with finish_reason: the stop string or token id; "" = null.
  std::string stop_reason;
  // completions logprobs: bytes of this choice's text sent in earlier chunks
  // (echo included), where this delta's first token starts.
  int logprobs_text_offset = 0;
  // chat: pieces of tool calls ("delta": {"tool_calls": [...]}).
  std::vector<ToolCallDelta> tool_calls;
};

// In every render function meta.endpoint picks the shape (text vs message
// or delta, completions- vs chat-style logprobs) and the object name; the
// request supplies want_logprobs and include_usage.

// the full response body. `usage` is always included.
std::string renderResponse(const ResponseMeta& meta, const GenerationRequest& request,
                           const std::vector<ChoiceResult>& choices, const Usage& usage);

// one chunk ("object": "text_completion" or "chat.completion.chunk") with
// one choice. With include_usage every chunk has "usage": null (as OpenAI
// sends it) and renderUsageChunk ends the stream; without it there is no
// "usage" key. "logprobs" is null when the delta has no logprob entries.
std::string renderChunk(const ResponseMeta& meta, const GenerationRequest& request,
                        const ChoiceDelta& delta);

// the final usage-only chunk of include_usage ("choices": []).
std::string renderUsageChunk(const ResponseMeta& meta, const Usage& usage);

struct ModelCard {
  std::string id;
  int64_t created = 0;
  int max_model_len = 0;
};
// GET /v1/models. "root" is the model's id, as vLLM serves it: never the
// server's file path (a host path tells a stranger about the server).
std::string renderModelList(const std::vector<ModelCard>& models);

}  // namespace tandem::openai
