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
    if (req->state != RequestState::kWaitingForKv && req->numUncomputedTokens() > 1) {
      total += req->numUncomputedTokens();
    }
  }
  return total;
}

void Scheduler::assertFits(int64_t prompt_len, const generation::SamplingParams& params) const {
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

absl::Status Scheduler::addRequest(generation::SeqId id, std::vector<int32_t> prompt,
                                   generation::SamplingParams params, KvConnector* kv_source) {
  if (requests_.contains(id) || held_.contains(id)) {
    return absl::AlreadyExistsError(absl::StrFormat("request %d already exists", id));
  }
  assertFits(static_cast<int64_t>(prompt.size()), params);
  TANDEM_CHECK(kv_source == nullptr ||
               std::find(connectors_.begin(), connectors_.end(), kv_source) != connectors_.end());
  const uint64_t seed = params.seed.value_or(seed_source_.next());
  auto req = std::make_unique<Request>(id, std::move(prompt), std::move(params), seed);
  req->kv_source = kv_source;
  waiting_.push_back(req.get());
  requests_.emplace(id, std::move(req));
  return absl::OkStatus();
}

std::optional<RequestOutput> Scheduler::land(const KvConnector* from,
                                             const KvConnector::Landed& landed) {
  TANDEM_CHECK(!step_in_flight_);
  Request* req = findRequest(landed.id);
  TANDEM_CHECK(req != nullptr && req->state == RequestState::kWaitingForKv &&
               req->waiting_on == from);
  --num_waiting_for_kv_;
  req->waiting_on = nullptr;
  const int base = req->num_computed_tokens;
  if (landed.first) {
    // the whole prompt's KV is in its blocks: as if it had prefilled here.
    if (req->num_cached_tokens < 0) req->num_cached_tokens = base;
    req->num_computed_tokens = req->num_prompt_tokens;
    kv_.commitFullBlocks(req->id, req->prompt());
    const int32_t token = landed.first->token;
    req->tokens.push_back(token);
    const generation::FinishReason reason = checkStop(*req, token);
    const RequestOutput out{req->id, token, reason, req->num_prompt_tokens,
                            req->numOutputTokens(), std::max(req->num_cached_tokens, 0)};
    req->state = RequestState::kRunning;
    // joins as the newest running request, as if admitted now.
    running_.push_back(req);
    if (reason != generation::FinishReason::kNone) finish(*req, reason);
    return out;
  }
  // what landed goes to the prefix cache (a failed remote prefill lands
  // nothing: the blocks written from outside go back unhashed, never
  // used); the request gives its blocks back and is admitted again at the
  // front, hitting what landed, computing the rest itself.
  kv_.commitFullBlocks(req->id, std::span<const int32_t>(req->tokens).first(base + landed.num_tokens));
  kv_.freeSequence(req->id);
  req->num_computed_tokens = 0;
  req->state = RequestState::kWaiting;
  waiting_.push_front(req);
  return std::nullopt;
}

bool Scheduler::releaseHeld(const KvConnector::Landed& released) {
  auto it = held_.find(released.id);
  if (it == held_.end()) return false;
  const Held& held = it->second;
  const size_t valid = std::min(held.tokens.size(),
                                static_cast<size_t>(held.num_computed_tokens + released.num_tokens));
  kv_.commitFullBlocks(released.id, std::span<const int32_t>(held.tokens).first(valid));
  kv_.freeSequence(released.id);
  held_.erase(it);
  return true;
}

std::vector<generation::SeqId> Scheduler::heldIds() const {
  std::vector<generation::SeqId> ids;
  for (const auto& [id, held] : held_) ids.push_back(id);
  return ids;
}

absl::Status Scheduler::abort(generation::SeqId id) {
  if (releaseHeld({.id = id})) return absl::OkStatus();
  Request* req = findRequest(id);
  if (req == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no live request %d", id));
  }
  // a row of the step in flight stays (the model computes it) but is skipped.
  for (Scheduled& s : scheduled_) {
    if (s.id == id) s.dropped = true;
  }
  finish(*req, generation::FinishReason::kAbort);
  return absl::OkStatus();
}

Request* Scheduler::findRequest(generation::SeqId id) {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

const Request* Scheduler::findRequest(generation::SeqId id) const {
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
  // the step computes into blocks evicted above: their copies down first,
  // waited for once here rather than one by one in the allocator
  kv_.settleEvictions();
  return buildBatch();
}

bool Scheduler::scheduleRunning(Request& req, int max_new, int& budget) {
  const int n = std::min(max_new, budget);
  // a request holding its blocks reserved its slots at admission: it needs
  // none here, so it never preempts (and is never preempted).
  const int missing = std::max(0, req.num_computed_tokens + n - kv_.numSlots(req.id));
  while (!kv_.appendSlots(req.id, missing).ok()) {
    // req needs slots, so it does not hold its blocks and can be preempted: at
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
    if (!(*it)->holdsBlocks()) return *it;
  }
  return nullptr;
}

void Scheduler::preempt(Request& victim, int& budget) {
  auto pos = std::find(running_.begin(), running_.end(), &victim);
  TANDEM_CHECK(pos != running_.end() && !victim.holdsBlocks());
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
  victim.kv_checked = false;
  victim.state = RequestState::kWaiting;
  ++victim.num_preemptions;
  ++num_preemptions_;
  waiting_.push_front(&victim);
}

std::optional<int> Scheduler::matchExternal(Request& req, int computed) {
  KvConnector* source = req.kv_source;
  bool source_asked = false;
  for (KvConnector* c : connectors_) {
    // a cached block has no logits: a request scoring its prompt computes
    // it whole (as vLLM, which skips the prefix cache for prompt logprobs).
    if (req.scoresPrompt()) break;
    if (!c->everyRequest() && c != source) continue;
    source_asked = source_asked || c == source;
    const int matched = c->matchedTokens(req, computed);
    const int missing = computed + matched - kv_.numSlots(req.id);
    if (matched <= 0 || !kv_.appendSlots(req.id, std::max(0, missing)).ok()) {
      if (c == source) c->declined(req);
      continue;
    }
    kv_.settleEvictions();  // the connector may write the blocks from another stream
    const std::optional<int> now = c->allocated(req, kv_.blockTable(req.id), computed, matched);
    if (!now) {
      if (source != nullptr && !source_asked) source->declined(req);
      waiting_.pop_front();
      req.state = RequestState::kWaitingForKv;
      req.waiting_on = c;
      req.num_computed_tokens = computed;
      ++num_waiting_for_kv_;
      return std::nullopt;
    }
    computed += *now;
    kv_.commitFullBlocks(req.id, std::span<const int32_t>(req.tokens).first(computed));
    // a shortened run: nothing can continue it.
    if (*now < matched) break;
  }
  if (source != nullptr && !source_asked) source->declined(req);
  return computed;
}

void Scheduler::admitWaiting(int& budget) {
  while (!waiting_.empty() && budget > 0 &&
         static_cast<int>(running_.size()) < config_.max_num_seqs) {
    Request& req = *waiting_.front();
    const bool scores = req.scoresPrompt();
    if (scores && scoring_rows_left_ == 0) break;  // FCFS: next step
    int computed = kv_.allocatePrompt(req.id, scores ? std::span<const int32_t>()
                                                     : std::span<const int32_t>(req.tokens));
    if (!req.kv_checked) {
      req.kv_checked = true;
      const std::optional<int> external = matchExternal(req, computed);
      // it waits for its KV: the next one may go.
      if (!external) continue;
      computed = *external;
    }
    if (req.num_cached_tokens < 0) req.num_cached_tokens = computed;
    const int n = capByScoringRows(
        req, std::min({req.numTokens() - computed, config_.chunk_size, budget}));
    // a request holding its blocks reserves its whole prompt now.
    const int want = req.holdsBlocks() ? req.numTokens() : computed + n;
    if (!kv_.appendSlots(req.id, std::max(0, want - kv_.numSlots(req.id))).ok()) {
      // FCFS: nobody jumps the queue; retry when blocks come back (what a
      // connector supplied is in the prefix cache by then).
      kv_.freeSequence(req.id);
      break;
    }
    waiting_.pop_front();
    req.num_computed_tokens = computed;
    req.state = RequestState::kRunning;
    running_.push_back(&req);
    addScheduled(req, n, computed + n == req.numTokens(), budget);
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
    if (req.holdsBlocks()) req.kv_source->progressed(req, kv_.blockTable(req.id));
    if (!has_row) continue;
    req.tokens.push_back(token);
    const generation::FinishReason reason = checkStop(req, token);
    outputs.push_back({req.id, token, reason, req.num_prompt_tokens, req.numOutputTokens(),
                       std::max(req.num_cached_tokens, 0)});
    if (reason != generation::FinishReason::kNone) finish(req, reason);
  }
  TANDEM_CHECK(row == sampled.size());
  scheduled_.clear();
  return outputs;
}

generation::FinishReason Scheduler::checkStop(const Request& req, int32_t token) const {
  const auto contains = [token](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), token) != ids.end();
  };
  if (!req.params.ignore_eos && contains(config_.eos_token_ids)) return generation::FinishReason::kStop;
  if (contains(req.params.stop_token_ids)) return generation::FinishReason::kStop;
  // the grammar's sentence is complete and nothing may follow it.
  if (req.grammar != nullptr && req.grammar->isTerminated()) return generation::FinishReason::kStop;
  if (req.numOutputTokens() >= req.params.max_tokens) return generation::FinishReason::kLength;
  if (req.numTokens() >= config_.max_model_len) return generation::FinishReason::kLength;
  return generation::FinishReason::kNone;
}

void Scheduler::finish(Request& req, generation::FinishReason reason) {
  // both hear of it: the request's own connector and the one it waits for;
  // either may keep its blocks (a hold, a load still writing into them).
  bool hold = req.kv_source != nullptr && req.kv_source->finished(req, reason);
  if (req.waiting_on != nullptr && req.waiting_on != req.kv_source) {
    hold = req.waiting_on->finished(req, reason) || hold;
  }
  if (hold) {
    held_[req.id] = Held{req.tokens, req.num_computed_tokens};
  } else {
    kv_.freeSequence(req.id);
  }
  if (req.state == RequestState::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), &req));
  } else if (req.state == RequestState::kWaiting) {
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &req));
  } else if (req.state == RequestState::kWaitingForKv) {
    --num_waiting_for_kv_;
  }
  req.state = RequestState::kFinished;
  req.finish_reason = reason;
  requests_.erase(req.id);  // destroys req.
}

}  // namespace tandem::engine
