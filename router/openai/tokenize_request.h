// The bodies of POST /tokenize and POST /detokenize, in vLLM's shapes:
//   /tokenize   {"model"?, "prompt": string, "add_special_tokens"?: true,
//                "return_token_strs"?: false}
//            or {"model"?, "messages": [...], "tools"?, "chat_template_kwargs"?,
//                "add_generation_prompt"?: true, "continue_final_message"?: false,
//                "return_token_strs"?: false}
//               -> {"count", "max_model_len", "tokens", "token_strs"}
//   /detokenize {"model"?, "tokens": [int]} -> {"prompt"}
// Messages are checked as on chat. No I/O, no tokenizing here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "router/openai/api_error.h"
#include "router/openai/openai_request.h"

namespace tandem::openai {

struct TokenizeRequest {
  std::string model;  // "" = the served one
  // with messages: the chat request to render (messages, tools, kwargs,
  // add_generation_prompt, continue_final_message); else the prompt.
  bool chat = false;
  GenerationRequest chat_request;
  std::string prompt;
  bool add_special_tokens = true;  // prompt only: BOS as a completion's prompt gets
  bool return_token_strs = false;
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;  // each >= 0; the vocabulary is the caller's check
};

std::variant<TokenizeRequest, ApiError> parseTokenizeRequest(std::string_view body);
std::variant<DetokenizeRequest, ApiError> parseDetokenizeRequest(std::string_view body);

// {"count", "max_model_len", "tokens", "token_strs"} (token_strs null
// unless given).
std::string renderTokenizeResponse(const std::vector<int32_t>& tokens, int max_model_len,
                                   const std::vector<std::string>* token_strs);
// {"prompt"}
std::string renderDetokenizeResponse(const std::string& prompt);

}  // namespace tandem::openai
