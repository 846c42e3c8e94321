#include "server/engine/scheduler.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tandem::engine {

Scheduler::Scheduler(SchedulerConfig config, kvcache::KvCacheManager& kv)
    : config_(std::move(config)), kv_(kv), seed_source_(std::random_device{}()) {
  TANDEM_CHECK(config_.max_num_seqs > 0 && config_.max_num_batched_tokens > 0);
  TANDEM_CHECK(config_.chunk_size > 0 && config_.max_model_len > 1);
  TANDEM_CHECK(config_.max_prompt_logprob_rows > 0);
}

int64_t Scheduler::numPrefillTokensQueued() const {
  int64_t total = 0;
  for (const auto& [id, req] : requests_) {
    // a decoding request has exactly one uncomputed token: its last.
    if (req->state != RequestState::kAwaitingKv && req->numUncomputedTokens() > 1) {
      total += req->numUncomputedTokens();
    }
  }
  return total;
}

void Scheduler::assertFits(int64_t prompt_len, const SamplingParams& params) const {
  // the front ends refused anything else (generation::checkRequest against
  // the limits the engine reports): breaking these is a caller's bug.
  TANDEM_CHECK(prompt_len > 0 && prompt_len < config_.max_model_len);
  TANDEM_CHECK(params.grammar_replay_tokens <= prompt_len && params.max_tokens > 0);
  // the last token's KV is never computed, so a request at its longest
  // stores final_len - 1 tokens; it must fit in the cache when alone.
  const int64_t final_len =
      std::min<int64_t>(prompt_len + params.max_tokens, config_.max_model_len);
  TANDEM_CHECK(kv_.blocksForTokens(final_len - 1) <= kv_.numBlocks());
}

absl::Status Scheduler::addRequest(SeqId id, std::vector<int32_t> prompt,
                                   SamplingParams params, bool hold_blocks_on_finish) {
  if (requests_.contains(id) || held_.contains(id)) {
    return absl::AlreadyExistsError(absl::StrFormat("request %d already exists", id));
  }
  assertFits(static_cast<int64_t>(prompt.size()), params);
  const uint64_t seed = params.seed.value_or(seed_source_.next());
  auto req = std::make_unique<Request>(id, std::move(prompt), std::move(params), seed);
  req->hold_blocks_on_finish = hold_blocks_on_finish;
  waiting_.push_back(req.get());
  requests_.emplace(id, std::move(req));
  return absl::OkStatus();
}

absl::StatusOr<int> Scheduler::admitAwaitingKv(SeqId id, std::vector<int32_t> prompt,
                                               SamplingParams params) {
  TANDEM_CHECK(!step_in_flight_);
  if (requests_.contains(id) || held_.contains(id)) {
    return absl::AlreadyExistsError(absl::StrFormat("request %d already exists", id));
  }
  assertFits(static_cast<int64_t>(prompt.size()), params);
  if (params.prompt_logprobs) {
    // the prompt's logits are computed where it is prefilled: here.
    return absl::InvalidArgumentError("a request with prompt_logprobs is prefilled locally");
  }
  // the caller needs the blocks now: only G2's synchronous copies help here.
  (void)kv_.onboardPrompt(prompt, /*include_disk=*/false);
  const int cached = kv_.allocatePrompt(id, prompt);
  const absl::Status slots = kv_.appendSlots(id, static_cast<int>(prompt.size()) - cached);
  if (!slots.ok()) {
    kv_.freeSequence(id);
    return slots;
  }
  const uint64_t seed = params.seed.value_or(seed_source_.next());
  auto req = std::make_unique<Request>(id, std::move(prompt), std::move(params), seed);
  req->state = RequestState::kAwaitingKv;
  req->num_cached_tokens = cached;
  req->num_computed_tokens = cached;
  requests_.emplace(id, std::move(req));
  ++num_awaiting_kv_;
  return cached;
}

Request* Scheduler::findAwaiting(SeqId id) {
  Request* req = findRequest(id);
  return req != nullptr && req->state == RequestState::kAwaitingKv ? req : nullptr;
}

absl::StatusOr<RequestOutput> Scheduler::completeRemotePrefill(SeqId id, int32_t first_token) {
  TANDEM_CHECK(!step_in_flight_);
  Request* req = findAwaiting(id);
  if (req == nullptr) {
    return absl::NotFoundError(absl::StrFormat("request %d is not awaiting kv", id));
  }
  req->num_computed_tokens = req->num_prompt_tokens;
  kv_.commitFullBlocks(id, req->prompt());
  req->tokens.push_back(first_token);
  const FinishReason reason = checkStop(*req, first_token);
  const RequestOutput out{id, first_token, reason, req->num_prompt_tokens,
                          req->numOutputTokens(), std::max(req->num_cached_tokens, 0)};
  if (reason != FinishReason::kNone) {
    finish(*req, reason);  // counts it out of the awaiting ones.
  } else {
    // joins as the newest running request, as if admitted now.
    --num_awaiting_kv_;
    req->state = RequestState::kRunning;
    running_.push_back(req);
  }
  return out;
}

absl::Status Scheduler::failRemotePrefill(SeqId id) {
  TANDEM_CHECK(!step_in_flight_);
  Request* req = findAwaiting(id);
  if (req == nullptr) {
    return absl::NotFoundError(absl::StrFormat("request %d is not awaiting kv", id));
  }
  --num_awaiting_kv_;
  // nothing was committed, so the blocks written from outside go back to
  // the free queue unhashed; the prefix hits stay cached and hit again.
  kv_.freeSequence(id);
  req->num_computed_tokens = 0;
  req->num_cached_tokens = -1;
  req->onboard_checked = false;
  req->state = RequestState::kWaiting;
  waiting_.push_front(req);
  return absl::OkStatus();
}

bool Scheduler::releaseHeld(SeqId id) {
  if (held_.erase(id) == 0) return false;
  kv_.freeSequence(id);
  return true;
}

absl::Status Scheduler::abort(SeqId id) {
  Request* req = findRequest(id);
  if (req == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no live request %d", id));
  }
  // a row of the step in flight stays (the model computes it) but is skipped.
  for (Scheduled& s : scheduled_) {
    if (s.id == id) s.dropped = true;
  }
  finish(*req, FinishReason::kAbort);
  return absl::OkStatus();
}

Request* Scheduler::findRequest(SeqId id) {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

const Request* Scheduler::findRequest(SeqId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

Batch Scheduler::schedule() {
  TANDEM_CHECK(!step_in_flight_);
  scheduled_.clear();
  int budget = config_.max_num_batched_tokens;
  scoring_rows_left_ = config_.max_prompt_logprob_rows;
  const int64_t preemptions_before = num_preemptions_;

  // decodes first: they are cheap and keep streams flowing. a victim is the
  // newest preemptible request, at index i or later, so indices before i
  // stay valid; when req itself was preempted the next one is now at i.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request& req = *running_[i];
    const bool stays = req.numUncomputedTokens() != 1 || scheduleRunning(req, 1, budget);
    if (stays) ++i;
  }
  // then prefills already under way, oldest first.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request& req = *running_[i];
    const int max_new =
        capByScoringRows(req, std::min(req.numUncomputedTokens(), config_.chunk_size));
    const bool stays =
        req.numUncomputedTokens() <= 1 || max_new == 0 || scheduleRunning(req, max_new, budget);
    if (stays) ++i;
  }
  // no new admissions in a step that had to preempt: the cache is full.
  if (num_preemptions_ == preemptions_before) admitWaiting(budget);

  step_in_flight_ = true;
  return buildBatch();
}

bool Scheduler::scheduleRunning(Request& req, int max_new, int& budget) {
  const int n = std::min(max_new, budget);
  // a held prefill reserved its slots at admission: it needs none here, so
  // it never preempts (and is never preempted).
  const int missing = std::max(0, req.num_computed_tokens + n - kv_.numSlots(req.id));
  while (!kv_.appendSlots(req.id, missing).ok()) {
    // req needs slots, so it is not a held prefill and can be preempted: at
    // worst req itself is the victim (it then waits for blocks to return).
    Request* victim = preemptionVictim();
    TANDEM_CHECK(victim != nullptr);
    preempt(*victim, budget);
    if (victim == &req) return false;
  }
  addScheduled(req, n, req.num_computed_tokens + n == req.numTokens(), budget);
  return true;
}

bool Scheduler::chunkScoresPrompt(const Request& req, int n) {
  if (!req.scoresPrompt()) return false;
  // position p's logits score prompt token p + 1: the chunk's positions
  // [start, start + n) meet the unscored ones [scored, prompt - 2].
  const int start = req.num_computed_tokens;
  const int scored = static_cast<int>(req.prompt_logprobs.size());
  return start <= req.num_prompt_tokens - 2 && start + n - 1 >= scored;
}

int Scheduler::capByScoringRows(const Request& req, int max_new) const {
  return req.scoresPrompt() ? std::min(max_new, scoring_rows_left_) : max_new;
}

void Scheduler::addScheduled(const Request& req, int n, bool needs_logits, int& budget) {
  const bool all_logits = chunkScoresPrompt(req, n);
  scheduled_.push_back({req.id, n, needs_logits, all_logits});
  budget -= n;
  if (all_logits) scoring_rows_left_ = std::max(0, scoring_rows_left_ - n);
}

Request* Scheduler::preemptionVictim() const {
  for (auto it = running_.rbegin(); it != running_.rend(); ++it) {
    if (!(*it)->hold_blocks_on_finish) return *it;
  }
  return nullptr;
}

void Scheduler::preempt(Request& victim, int& budget) {
  auto pos = std::find(running_.begin(), running_.end(), &victim);
  TANDEM_CHECK(pos != running_.end() && !victim.hold_blocks_on_finish);
  running_.erase(pos);
  // a victim already scheduled this step gives its tokens back.
  auto it = std::find_if(scheduled_.begin(), scheduled_.end(),
                         [&](const Scheduled& s) { return s.id == victim.id; });
  if (it != scheduled_.end()) {
    budget += it->num_new_tokens;
    if (it->all_logits) scoring_rows_left_ += it->num_new_tokens;
    scheduled_.erase(it);
  }
  kv_.freeSequence(victim.id);
  victim.num_computed_tokens = 0;
  victim.onboard_checked = false;
  victim.state = RequestState::kWaiting;
  ++victim.num_preemptions;
  ++num_preemptions_;
  waiting_.push_front(&victim);
}

void Scheduler::resumeOnboarded() {
  // in completion order, each ahead of the ones before it: the latest to
  // complete goes first, which is as fair as any order among them.
  for (uint64_t ticket : kv_.finishOnboards()) {
    auto it = onboarding_.find(ticket);
    if (it == onboarding_.end()) continue;  // aborted meanwhile
    Request* req = it->second;
    onboarding_.erase(it);
    req->state = RequestState::kWaiting;
    waiting_.push_front(req);
  }
}

bool Scheduler::startOnboarding(Request& req) {
  if (req.onboard_checked) return false;
  req.onboard_checked = true;
  const kvcache::KvCacheManager::Onboard onboard =
      kv_.onboardPrompt(req.tokens, /*include_disk=*/true);
  if (onboard.state != kvcache::KvCacheManager::OnboardState::kPending) return false;
  waiting_.pop_front();
  req.state = RequestState::kOnboarding;
  req.onboard_ticket = onboard.ticket;
  onboarding_.emplace(onboard.ticket, &req);
  return true;
}

void Scheduler::admitWaiting(int& budget) {
  resumeOnboarded();
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int>(running_.size()) < config_.max_num_seqs) {
    Request& req = *waiting_.front();
    // a cached block has no logits: a request scoring its prompt computes
    // it whole (as vLLM, which skips the prefix cache for prompt logprobs).
    const bool scores = req.scoresPrompt();
    if (scores && scoring_rows_left_ == 0) break;  // FCFS: next step
    // its blocks are on their way from a lower tier: the next one may go.
    if (!scores && startOnboarding(req)) continue;
    const int cached =
        kv_.allocatePrompt(req.id, scores ? std::span<const int32_t>()
                                          : std::span<const int32_t>(req.tokens));
    if (req.num_cached_tokens < 0) req.num_cached_tokens = cached;
    const int n = capByScoringRows(
        req, std::min({req.numTokens() - cached, config_.chunk_size, budget}));
    // a held prefill reserves its whole prompt now (see Request).
    const int slots = req.hold_blocks_on_finish ? req.numTokens() - cached : n;
    if (!kv_.appendSlots(req.id, slots).ok()) {
      // FCFS: nobody jumps the queue; retry when blocks come back.
      kv_.freeSequence(req.id);
      break;
    }
    waiting_.pop_front();
    req.num_computed_tokens = cached;
    req.state = RequestState::kRunning;
    running_.push_back(&req);
    addScheduled(req, n, cached + n == req.numTokens(), budget);
  }
}

Batch Scheduler::buildBatch() const {
  Batch batch;
  batch.seqs.reserve(scheduled_.size());
  for (const Scheduled& s : scheduled_) {
    const Request& req = *requests_.at(s.id);
    SequenceChunk chunk;
    chunk.seq_id = s.id;
    chunk.start_pos = req.num_computed_tokens;
    chunk.tokens.assign(req.tokens.begin() + chunk.start_pos,
                        req.tokens.begin() + chunk.start_pos + s.num_new_tokens);
    // a held prefill holds blocks beyond this chunk: the batch names only
    // those covering it.
    const auto table = kv_.blockTable(s.id).first(std::min<size_t>(
        kv_.blockTable(s.id).size(), kv_.blocksForTokens(chunk.start_pos + s.num_new_tokens)));
    chunk.block_table.assign(table.begin(), table.end());
    chunk.needs_logits = s.needs_logits;
    chunk.all_logits = s.all_logits;
    batch.seqs.push_back(std::move(chunk));
  }
  return batch;
}

std::vector<RequestOutput> Scheduler::onStepResult(std::span<const int32_t> sampled) {
  TANDEM_CHECK(step_in_flight_);
  step_in_flight_ = false;
  std::vector<RequestOutput> outputs;
  size_t row = 0;
  for (const Scheduled& s : scheduled_) {
    const bool has_row = s.needs_logits;
    if (has_row) TANDEM_CHECK(row < sampled.size());
    const int32_t token = has_row ? sampled[row++] : 0;
    if (s.dropped) continue;
    Request& req = *requests_.at(s.id);
    req.num_computed_tokens += s.num_new_tokens;
    kv_.commitFullBlocks(
        req.id, std::span<const int32_t>(req.tokens).first(req.num_computed_tokens));
    if (!has_row) continue;
    req.tokens.push_back(token);
    const FinishReason reason = checkStop(req, token);
    outputs.push_back({req.id, token, reason, req.num_prompt_tokens, req.numOutputTokens(),
                       std::max(req.num_cached_tokens, 0)});
    if (reason != FinishReason::kNone) finish(req, reason);
  }
  TANDEM_CHECK(row == sampled.size());
  scheduled_.clear();
  return outputs;
}

FinishReason Scheduler::checkStop(const Request& req, int32_t token) const {
  const auto contains = [token](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  if (!req.params.ignore_eos && contains(config_.eos_token_ids)) return FinishReason::kStop;
  if (contains(req.params.stop_token_ids)) return FinishReason::kStop;
  // the grammar's sentence is complete and nothing may follow it.
  if (req.grammar != nullptr && req.grammar->isTerminated()) return FinishReason::kStop;
  if (req.numOutputTokens() >= req.params.max_tokens) return FinishReason::kLength;
  if (req.numTokens() >= config_.max_model_len) return FinishReason::kLength;
  return FinishReason::kNone;
}

void Scheduler::finish(Request& req, FinishReason reason) {
  const bool hold = req.hold_blocks_on_finish &&
                    (reason == FinishReason::kStop || reason == FinishReason::kLength);
  if (hold) {
    held_.insert(req.id);
  } else {
    kv_.freeSequence(req.id);
  }
  if (req.state == RequestState::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), &req));
  } else if (req.state == RequestState::kWaiting) {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &req));
  } else if (req.state == RequestState::kAwaitingKv) {
    --num_awaiting_kv_;
  } else if (req.state == RequestState::kOnboarding) {
    // the loads finish without it: their blocks still reach the cache.
    onboarding_.erase(req.onboard_ticket);
  }
  req.state = RequestState::kFinished;
  req.finish_reason = reason;
  requests_.erase(req.id);  // destroys req.
}

}  // namespace tandem::engine
