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

#include "generation/sampling_params.h"
#include "generation/token_output.h"
#include "server/engine/batch.h"
#include "server/engine/kv_connector.h"
#include "server/engine/sampler_rng.h"
#include "text/grammar/token_matcher.h"

namespace tandem::engine {

// kWaitingForKv: admitted with blocks for prompt tokens whose KV a connector
// fills (a remote prefill, a load from a lower tier); neither waiting nor
// running, so never scheduled until the connector reports it landed.
enum class RequestState { kWaiting, kRunning, kWaitingForKv, kFinished };

struct Request {
  Request(generation::SeqId id_in, std::vector<int32_t> prompt, generation::SamplingParams params_in,
          uint64_t seed)
      : id(id_in),
        tokens(std::move(prompt)),
        num_prompt_tokens(static_cast<int>(tokens.size())),
        params(std::move(params_in)),
        rng(seed) {}

  generation::SeqId id;
  // prompt ‖ output.
  std::vector<int32_t> tokens;
  int num_prompt_tokens;
  generation::SamplingParams params;
  // the request's own generator, seeded from params.seed when set.
  SamplerRng rng;
  // structured output: where the output stands in params.grammar (null when
  // there is none). it has accepted every output token so far, so it
  // survives preemption (the tokens stay) and is rebuilt, not moved, when a
  // request migrates (grammar_replay_tokens).
  std::unique_ptr<grammar::TokenMatcher> grammar;

  RequestState state = RequestState::kWaiting;
  generation::FinishReason finish_reason = generation::FinishReason::kNone;
  // leading tokens whose KV is in the cache (computed or found cached).
  int num_computed_tokens = 0;
  // prompt tokens found in the prefix cache at first admission, for usage
  // reporting (OpenAI's prompt_tokens_details.cached_tokens); -1 until then.
  int num_cached_tokens = -1;
  int num_preemptions = 0;
  // the connectors were asked for this admission's prompt KV (once per
  // admission: reset when the request loses its blocks to a preemption).
  bool kv_checked = false;
  // the connector the request was submitted with (a remote prefill, a held
  // prefill), or null; the scheduler owns none of them.
  KvConnector* kv_source = nullptr;
  // while kWaitingForKv: the connector it waits for.
  KvConnector* waiting_on = nullptr;
  // with params.prompt_logprobs: the prompt tokens scored so far, from the
  // second on (entry i is prompt token i + 1). Kept across a preemption
  // (the recompute skips them) and handed out with the first output.
  std::vector<generation::PromptTokenLogprob> prompt_logprobs;

  // the prompt still has tokens to score: every chunk over it needs all its
  // logits, and it is not served from the prefix cache. False once the
  // first token is out (the scores went with it).
  bool scoresPrompt() const {
    return params.prompt_logprobs.has_value() && numOutputTokens() == 0 &&
           static_cast<int>(prompt_logprobs.size()) < num_prompt_tokens - 1;
  }

  // a prefill served for another worker (KvConnector::holdsBlocks): it
  // reserves blocks for its whole prompt when admitted (so its block table
  // is final from its first chunk and it is never a preemption victim) and,
  // when it finishes normally, its blocks stay until the connector releases them.
  bool holdsBlocks() const { return kv_source != nullptr && kv_source->holdsBlocks(); }

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
