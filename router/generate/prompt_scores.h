// A scored prompt (generation::TokenOutput::prompt_logprobs) in the shapes
// the OpenAI front end answers with: the legacy completions logprobs of an
// echoed prompt, and vLLM's prompt_logprobs. The prompt's token texts are
// spelled so that they join into the echoed prompt (decode()'s text), so
// text_offset stays true across the prompt and the completion.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "generation/token_output.h"
#include "router/openai/openai_response.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::router {

// each prompt token's text: with skip_special a special token's is "", the
// first other token's is decode() of it alone (SentencePiece drops its
// leading space there), every later one's its tokenBytes().
std::vector<std::string> promptTokenTexts(const tokenizer::Tokenizer& tok,
                                          std::span<const int32_t> ids, bool skip_special);

// the echoed prompt's logprob entries: the first unscored, then each
// token's logprob and the top_n most likely tokens at its position.
// `scores` has one entry per prompt token from the second.
std::vector<openai::TokenLogprobEntry> echoedPromptLogprobs(
    const tokenizer::Tokenizer& tok, const std::vector<std::string>& texts,
    std::span<const generation::PromptTokenLogprob> scores, int top_n);

// vLLM's prompt_logprobs: nothing for the first token, then per token
// itself and the top_n most likely tokens at its position, each once.
openai::PromptLogprobs vllmPromptLogprobs(const tokenizer::Tokenizer& tok,
                                          const std::vector<std::string>& texts,
                                          std::span<const generation::PromptTokenLogprob> scores,
                                          int top_n);

}  // namespace tandem::router
