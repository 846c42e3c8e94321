#include "router/generate/prompt_scores.h"

#include <algorithm>

namespace tandem::router {

std::vector<std::string> promptTokenTexts(const tokenizer::Tokenizer& tok,
                                          std::span<const int32_t> ids, bool skip_special) {
  std::vector<std::string> texts;
  texts.reserve(ids.size());
  bool first_text = true;
  for (int32_t id : ids) {
    if (skip_special && tok.isSpecial(id)) {
      texts.emplace_back();
    } else if (first_text) {
      texts.push_back(tok.decode({id}, skip_special));
      first_text = false;
    } else {
      texts.push_back(tok.tokenBytes(id));
    }
  }
  return texts;
}

std::vector<openai::TokenLogprobEntry> echoedPromptLogprobs(
    const tokenizer::Tokenizer& tok, const std::vector<std::string>& texts,
    std::span<const generation::PromptTokenLogprob> scores, int top_n) {
  std::vector<openai::TokenLogprobEntry> entries;
  if (texts.empty()) return entries;
  entries.reserve(scores.size() + 1);
  entries.push_back({.token = texts[0], .unscored = true});
  for (size_t i = 0; i < scores.size() && i + 1 < texts.size(); ++i) {
    openai::TokenLogprobEntry entry{texts[i + 1], scores[i].logprob, {}};
    const size_t n = std::min<size_t>(top_n, scores[i].top_logprobs.size());
    for (size_t k = 0; k < n; ++k) {
      const generation::TokenLogprob& top = scores[i].top_logprobs[k];
      entry.top.push_back({tok.tokenBytes(top.token), top.logprob});
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

openai::PromptLogprobs vllmPromptLogprobs(const tokenizer::Tokenizer& tok,
                                          const std::vector<std::string>& texts,
                                          std::span<const generation::PromptTokenLogprob> scores,
                                          int top_n) {
  openai::PromptLogprobs out;
  if (texts.empty()) return out;
  out.reserve(scores.size() + 1);
  out.emplace_back();  // the first token: null
  for (size_t i = 0; i < scores.size() && i + 1 < texts.size(); ++i) {
    const generation::PromptTokenLogprob& s = scores[i];
    std::vector<openai::PromptCandidate> position;
    position.push_back({s.token, texts[i + 1], s.logprob, s.rank});
    const size_t n = std::min<size_t>(top_n, s.top_logprobs.size());
    for (size_t k = 0; k < n; ++k) {
      const generation::TokenLogprob& top = s.top_logprobs[k];
      if (top.token == s.token) continue;  // listed already, with its rank
      position.push_back({top.token, tok.tokenBytes(top.token), top.logprob, static_cast<int>(k + 1)});
    }
    out.push_back(std::move(position));
  }
  return out;
}

}  // namespace tandem::router
