// The state of one sequence in the scheduler: its tokens, how far its KV has
// been computed, its sampling parameters and generator, and why it finished.
//
// tokens = prompt ‖ output. After a preemption by recompute the sequence
// simply has num_computed_tokens = 0 again: its whole token list (prompt and
// the output so far) is prefilled anew, and generation continues where it
// stopped, so a preempted request's output equals an uninterrupted run's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "server/engine/batch.h"
#include "server/engine/generation_types.h"
#include "server/engine/sampler_rng.h"
#include "text/grammar/token_matcher.h"

namespace tandem::engine {

// kAwaitingKv: admitted with blocks for its whole prompt, whose KV another
// worker is writing (disaggregated prefill); neither waiting nor running, so
// never scheduled until the remote prefill completes or fails.
// kOnboarding: its prompt's blocks are being loaded back from a lower KV
// tier (G3) into blocks the KV cache holds for it; it waits aside, neither
// waiting nor running, and returns to the front of the waiting queue when
// they are in (it then hits them in the prefix cache).
enum class RequestState { kWaiting, kRunning, kAwaitingKv, kOnboarding, kFinished };

struct Request {
  Request(SeqId id_in, std::vector<int32_t> prompt, SamplingParams params_in, uint64_t seed)
      : id(id_in),
        tokens(std::move(prompt)),
        num_prompt_tokens(static_cast<int>(tokens.size())),
        params(std::move(params_in)),
        rng(seed) {}

  SeqId id;
  // prompt ‖ output.
  std::vector<int32_t> tokens;
  int num_prompt_tokens;
  SamplingParams params;
  // the request's own generator, seeded from params.seed when set.
  SamplerRng rng;
  // structured output: where the output stands in params.grammar (null when
  // there is none). it has accepted every output token so far, so it
  // survives preemption (the tokens stay) and is rebuilt, not moved, when a
  // request migrates (grammar_replay_tokens).
  std::unique_ptr<grammar::TokenMatcher> grammar;

  RequestState state = RequestState::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;
  // leading tokens whose KV is in the cache (computed or found cached).
  int num_computed_tokens = 0;
  // prompt tokens found in the prefix cache at first admission, for usage
  // reporting (OpenAI's prompt_tokens_details.cached_tokens); -1 until then.
  int num_cached_tokens = -1;
  int num_preemptions = 0;
  // the lower KV tiers were searched for this admission's prompt blocks
  // (once per admission: reset when the request loses its blocks).
  bool onboard_checked = false;
  // the KV cache's onboarding ticket while kOnboarding.
  uint64_t onboard_ticket = 0;
  // a prefill served for another worker: it reserves blocks for its whole
  // prompt when admitted (so its block table is final from its first chunk
  // and it is never a preemption victim) and, when it finishes normally,
  // its blocks stay allocated until the scheduler's releaseHeld.
  bool hold_blocks_on_finish = false;
  // with params.prompt_logprobs: the prompt tokens scored so far, from the
  // second on (entry i is prompt token i + 1). Kept across a preemption
  // (the recompute skips them) and handed out with the first output.
  std::vector<PromptTokenLogprob> prompt_logprobs;

  // the prompt still has tokens to score: every chunk over it needs all its
  // logits, and it is not served from the prefix cache. False once the
  // first token is out (the scores went with it).
  bool scoresPrompt() const {
    return params.prompt_logprobs.has_value() && numOutputTokens() == 0 &&
           static_cast<int>(prompt_logprobs.size()) < num_prompt_tokens - 1;
  }

  int numTokens() const { return static_cast<int>(tokens.size()); }
  int numOutputTokens() const { return numTokens() - num_prompt_tokens; }
  std::span<const int32_t> prompt() const {
    return std::span<const int32_t>(tokens).first(num_prompt_tokens);
  }
  std::span<const int32_t> output() const {
    return std::span<const int32_t>(tokens).subspan(num_prompt_tokens);
  }
  // tokens not yet computed: 1 for a decode, more while (re)prefilling.
  int numUncomputedTokens() const { return numTokens() - num_computed_tokens; }
};

}  // namespace tandem::engine
