#include "server/engine/engine.h"

#include <algorithm>
#include <cassert>

#include "common/status.h"

namespace tandem::engine {

Engine::Engine(const EngineConfig& config, StepModel& model)
    : model_(model),
      kv_(config.num_blocks, config.block_size, config.enable_prefix_caching),
      scheduler_(config.scheduler, kv_) {}

absl::Status Engine::checkGrammar(const generation::SamplingParams& params) const {
  if (params.grammar.empty()) return absl::OkStatus();
  if (grammars_ == nullptr) {
    return absl::InvalidArgumentError(
        "structured output (response_format or grammar) needs the model's tokenizer, which "
        "this worker could not load");
  }
  return grammars_->get(params.grammar).status();
}

absl::StatusOr<std::unique_ptr<grammar::TokenMatcher>> Engine::makeMatcher(
    std::span<const int32_t> prompt, const generation::SamplingParams& params) const {
  if (params.grammar.empty()) return nullptr;
  if (grammars_ == nullptr) return checkGrammar(params);
  ASSIGN_OR_RETURN(std::shared_ptr<grammar::GrammarAutomaton> automaton,
                   grammars_->get(params.grammar));
  auto matcher = std::make_unique<grammar::TokenMatcher>(std::move(automaton));
  const size_t replay = std::min<size_t>(params.grammar_replay_tokens, prompt.size());
  if (!matcher->acceptAll(prompt.last(replay))) {
    return absl::InvalidArgumentError(
        "the output tokens to resume from do not follow the request's grammar");
  }
  return matcher;
}

absl::Status Engine::addRequest(generation::SeqId id, std::vector<int32_t> prompt,
                                generation::SamplingParams params, KvConnector* kv_source) {
  ASSIGN_OR_RETURN(std::unique_ptr<grammar::TokenMatcher> matcher, makeMatcher(prompt, params));
  RETURN_IF_ERROR(scheduler_.addRequest(id, std::move(prompt), std::move(params), kv_source));
  scheduler_.findRequest(id)->grammar = std::move(matcher);
  return absl::OkStatus();
}

void Engine::setKvWakeup(const std::function<void()>& wakeup) {
  for (KvConnector* c : scheduler_.connectors()) c->setWakeup(wakeup);
}

bool Engine::takeFirstToken(Request& req, const generation::TokenOutput& first) {
  // the prefill worker sampled under the same grammar; a token it refuses
  // means the two disagree: the request prefills here instead.
  if (req.grammar != nullptr && !req.grammar->accept(first.token)) return false;
  // keep the generator where an aggregated run's would be after sampling
  // the first token (Sampler::sample draws once unless greedy).
  if (!req.params.isGreedy()) (void)req.rng.uniform();
  return true;
}

std::vector<generation::TokenOutput> Engine::collectKv() {
  std::vector<generation::TokenOutput> outputs;
  for (KvConnector* c : scheduler_.connectors()) {
    for (KvConnector::Landed& landed : c->takeLanded()) {
      Request* req = scheduler_.findRequest(landed.id);
      // cancelled meanwhile, or not waiting for this connector.
      if (req == nullptr || req->state != RequestState::kWaitingForKv || req->waiting_on != c) {
        continue;
      }
      if (landed.first && !takeFirstToken(*req, *landed.first)) landed.first.reset();
      const std::optional<RequestOutput> r = scheduler_.land(c, landed);
      if (!r) continue;
      outputs.push_back({r->id, r->token, landed.first->logprob,
                         std::move(landed.first->top_logprobs), r->finish_reason,
                         r->num_prompt_tokens, r->num_output_tokens, r->num_cached_tokens});
    }
    for (const KvConnector::Landed& released : c->takeReleased()) scheduler_.releaseHeld(released);
  }
  return outputs;
}

absl::Status Engine::abort(generation::SeqId id) { return scheduler_.abort(id); }

void Engine::setKvEventListener(kvcache::KvEventListener* listener) {
  kv_.setEventListener(listener);
  if (tiers_ != nullptr) tiers_->setEventListener(listener);
}

void Engine::setKvTiers(kvcache::KvTierChain* tiers) {
  tiers_ = tiers != nullptr && !tiers->empty() ? tiers : nullptr;
  kv_.setEvictionListener(tiers_);
}

std::vector<generation::TokenOutput> Engine::step() {
  std::vector<generation::TokenOutput> outputs = collectKv();
  for (generation::TokenOutput& out : runStep()) outputs.push_back(std::move(out));
  // between steps: keep G2 under its watermark.
  if (tiers_ != nullptr) tiers_->maintain();
  return outputs;
}

bool Engine::picksWhereTheLogitsAre(const Batch& batch) {
  if (!model_.picksWhereTheLogitsAre()) return false;
  for (const SequenceChunk& chunk : batch.seqs) {
    if (chunk.numLogitRows() == 0) continue;
    if (chunk.all_logits) return false;
    const Request* req = scheduler_.findRequest(chunk.seq_id);
    if (req == nullptr || req->params.logprobs.value_or(0) > 0 ||
        req->params.prompt_logprobs.has_value()) {
      return false;
    }
  }
  return true;
}

void Engine::describeSampling(const Batch& batch) {
  pick_rows_.clear();
  size_t masks = 0;  // of pick_masks_ in use this step
  for (const SequenceChunk& chunk : batch.seqs) {
    if (!chunk.needs_logits) continue;
    Request* req = scheduler_.findRequest(chunk.seq_id);
    TANDEM_CHECK(req != nullptr);
    kernels::RowSampling& row =
        pick_rows_.emplace_back(rowSampling(req->params, {req->prompt(), req->output()}));
    if (req->grammar != nullptr) {
      // a copy: a matcher's mask lives in its automaton, which the next
      // matcher of the same grammar may grow or trim
      const grammar::TokenMask& allowed = req->grammar->allowedTokens(scheduler_.tokensLeft(*req));
      if (masks == pick_masks_.size()) pick_masks_.emplace_back();
      std::vector<uint64_t>& words = pick_masks_[masks++];
      words.assign(allowed.words().begin(), allowed.words().end());
      row.mask_words = words;
      row.mask_tokens = allowed.numTokens();
    }
    // Sampler::sample's one draw of a request that is not greedy
    if (!row.greedy) row.u = req->rng.uniform();
  }
}

std::vector<generation::TokenOutput> Engine::runStep() {
  const int64_t preemptions_before = scheduler_.numPreemptions();
  const Batch batch = scheduler_.schedule();
  stalled_ = batch.seqs.empty() && scheduler_.numPreemptions() == preemptions_before;
  if (batch.seqs.empty()) {
    scheduler_.onStepResult({});
    return {};
  }
  const int rows = batch.numLogitRows();
  const bool picked = picksWhereTheLogitsAre(batch);
  if (picked) describeSampling(batch);
  if (picked ? !model_.forwardPicks(batch, pick_rows_, &picks_).ok() || picks_.size() != static_cast<size_t>(rows)
             : !model_.forward(batch, &logits_).ok() ||
                   (rows > 0 && (logits_.empty() || logits_.size() % rows != 0))) {
    return failStep(batch);
  }

  // score each prompt row, and sample each chunk's last row when it asks,
  // with its request's params and generator.
  std::vector<int32_t> tokens;
  std::vector<SampleResult> samples;
  // a first output's prompt scores, by sample (the request may finish, and
  // go, in onStepResult).
  std::vector<std::vector<generation::PromptTokenLogprob>> scores;
  tokens.reserve(rows);
  samples.reserve(rows);
  const size_t vocab = rows > 0 && !picked ? logits_.size() / rows : 0;
  size_t next_row = 0;
  for (const SequenceChunk& chunk : batch.seqs) {
    const size_t first_row = next_row;
    next_row += static_cast<size_t>(chunk.numLogitRows());
    if (chunk.numLogitRows() == 0) continue;
    Request* req = scheduler_.findRequest(chunk.seq_id);
    TANDEM_CHECK(req != nullptr);
    if (chunk.all_logits) scorePrompt(*req, chunk, logits_.data() + first_row * vocab, vocab);
    if (!chunk.needs_logits) continue;
    const size_t row = next_row - 1;
    if (picked) {
      samples.push_back({picks_[row].token, picks_[row].logprob, {}});
    } else {
      const std::span<const float> logits(logits_.data() + row * vocab, vocab);
      // the budget keeps a whole sentence reachable before length ends it.
      const grammar::TokenMask* allowed =
          req->grammar != nullptr ? &req->grammar->allowedTokens(scheduler_.tokensLeft(*req))
                                  : nullptr;
      samples.push_back(sampler_.sample(logits, req->params, {req->prompt(), req->output()},
                                        req->rng, allowed));
    }
    // the mask allowed it (it always allows a token: end-of-sequence when
    // the vocabulary can spell nothing else), so the grammar advances here,
    // before onStepResult's stop checks read it. Only logits that are not
    // numbers (NaN from a broken model, or KV never written) make the
    // sampler leave the mask: then the mask's first token is taken, so the
    // output still follows the grammar.
    if (req->grammar != nullptr && !req->grammar->accept(samples.back().token)) {
      samples.back().token = req->grammar->allowedTokens(scheduler_.tokensLeft(*req)).first();
      [[maybe_unused]] const bool followed = req->grammar->accept(samples.back().token);
      assert(followed);  // an allowed token is always accepted
    }
    tokens.push_back(samples.back().token);
    // the first token takes the prompt's scores with it.
    const bool first = req->params.prompt_logprobs.has_value() && req->numOutputTokens() == 0;
    scores.push_back(first ? std::move(req->prompt_logprobs) : std::vector<generation::PromptTokenLogprob>());
  }

  const std::vector<RequestOutput> results = scheduler_.onStepResult(tokens);
  // no abort can happen between schedule and onStepResult here, so every
  // sampled row has its output, in the same order.
  TANDEM_CHECK(results.size() == samples.size());
  std::vector<generation::TokenOutput> outputs;
  outputs.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const RequestOutput& r = results[i];
    outputs.push_back({r.id, r.token, samples[i].logprob, std::move(samples[i].top_logprobs),
                       r.finish_reason, r.num_prompt_tokens, r.num_output_tokens,
                       r.num_cached_tokens, std::move(scores[i])});
  }
  return outputs;
}

void Engine::scorePrompt(Request& req, const SequenceChunk& chunk, const float* logits,
                         size_t vocab) {
  // row i holds position start_pos + i's logits, which score prompt token
  // start_pos + i + 1; tokens scored before a preemption are not redone.
  const int top_n = *req.params.prompt_logprobs;
  for (size_t i = 0; i < chunk.tokens.size(); ++i) {
    const int target = chunk.start_pos + static_cast<int>(i) + 1;
    if (target >= req.num_prompt_tokens) break;
    if (target != static_cast<int>(req.prompt_logprobs.size()) + 1) continue;
    req.prompt_logprobs.push_back(Sampler::score(std::span<const float>(logits + i * vocab, vocab),
                                                 req.tokens[target], top_n));
  }
}

std::vector<generation::TokenOutput> Engine::failStep(const Batch& batch) {
  std::vector<generation::TokenOutput> outputs;
  for (const SequenceChunk& chunk : batch.seqs) {
    const Request* req = scheduler_.findRequest(chunk.seq_id);
    generation::TokenOutput out;
    out.id = chunk.seq_id;
    out.token = -1;
    out.finish_reason = generation::FinishReason::kError;
    out.num_prompt_tokens = req->num_prompt_tokens;
    out.num_output_tokens = req->numOutputTokens();
    out.num_cached_tokens = std::max(req->num_cached_tokens, 0);
    outputs.push_back(std::move(out));
    // frees the request's blocks; its row of this step is dropped.
    TANDEM_CHECK(scheduler_.abort(chunk.seq_id).ok());
  }
  scheduler_.onStepResult(std::vector<int32_t>(batch.numSampledRows(), 0));
  return outputs;
}

}  // namespace tandem::engine
