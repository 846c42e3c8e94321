#include "server/engine/engine_loop.h"

#include <algorithm>
#include <future>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tandem::engine {

EngineLoop::EngineLoop(EngineAssemblyPtr engine)
    : engine_(std::move(engine)),
      vocab_size_(engine_->weights().config().vocab_size),
      limits_(engine_->limits()) {
  {
    std::lock_guard lock(mu_);
    stats_.num_blocks = engine_->numBlocks();
    stats_.num_free_blocks = engine_->numBlocks();
  }
  engine_->engine().setKvEventListener(&kv_events_);
  // a lower tier finished reading an onboarding's blocks: step again.
  engine_->engine().setOnboardWakeup([this] { (void)post([] {}); });
  thread_ = std::thread([this] { run(); });
  loop_id_ = thread_.get_id();
}

EngineLoop::~EngineLoop() {
  stop();
  // the log and the loop die before the engine (and its tiers' threads).
  engine_->engine().setOnboardWakeup(nullptr);
  engine_->engine().setKvEventListener(nullptr);
}

absl::Status EngineLoop::checkSubmission(const std::vector<int32_t>& prompt,
                                         const SamplingParams& params) const {
  // the front ends checked the limits (generation::checkRequest): a request
  // past them here is a caller's bug, not a client's mistake.
  TANDEM_CHECK(generation::checkRequest(limits_, prompt, params).ok());
  // the engine's grammar cache reads only immutable configuration: safe here.
  return engine_->engine().checkGrammar(params);
}

absl::Status EngineLoop::post(Task task) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return absl::FailedPreconditionError("the engine is shutting down");
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
  return absl::OkStatus();
}

absl::Status EngineLoop::submit(SeqId id, std::vector<int32_t> prompt, SamplingParams params,
                                OutputCallback callback) {
  absl::Status status = checkSubmission(prompt, params);
  if (!status.ok()) return status;
  return post([this, id, prompt = std::move(prompt), params = std::move(params),
               callback = std::move(callback)]() mutable {
    admit(id, std::move(prompt), std::move(params), std::move(callback), false);
  });
}

absl::Status EngineLoop::submitPrefill(SeqId id, std::vector<int32_t> prompt,
                                       SamplingParams params, PrefillCallbacks callbacks) {
  params.max_tokens = 1;
  absl::Status status = checkSubmission(prompt, params);
  if (!status.ok()) return status;
  return post([this, id, prompt = std::move(prompt), params = std::move(params),
               callbacks = std::move(callbacks)]() mutable {
    const int num_prompt_tokens = static_cast<int>(prompt.size());
    const bool admitted = !callbacks_.contains(id) && !engine_->engine().isHeld(id);
    admit(id, std::move(prompt), std::move(params), std::move(callbacks.on_done), true);
    if (admitted) {
      prefills_[id] = PrefillProgress{std::move(callbacks.on_progress), num_prompt_tokens, 0};
    }
  });
}

void EngineLoop::releasePrefill(SeqId id) {
  (void)post([this, id] {
    // a prefill not done yet is cancelled (on_done gets kAbort).
    if (engine_->engine().isHeld(id) || prefills_.contains(id)) cancelNow(id);
  });
}

void EngineLoop::cancel(SeqId id) {
  (void)post([this, id] { cancelNow(id); });
}

absl::StatusOr<EngineLoop::KvAllocation> EngineLoop::submitAwaitingKv(SeqId id,
                                                                     std::vector<int32_t> prompt,
                                                                     SamplingParams params,
                                                                     OutputCallback callback) {
  absl::Status status = checkSubmission(prompt, params);
  if (!status.ok()) return status;
  if (std::this_thread::get_id() == loop_id_) {
    return admitAwaitingKv(id, std::move(prompt), std::move(params), std::move(callback));
  }
  // the task may capture locals by reference: this call waits for it, and
  // a posted task always runs (stop() runs the queued ones before exiting).
  std::promise<absl::StatusOr<KvAllocation>> result;
  std::future<absl::StatusOr<KvAllocation>> done = result.get_future();
  status = post([&] {
    result.set_value(
        admitAwaitingKv(id, std::move(prompt), std::move(params), std::move(callback)));
  });
  if (!status.ok()) return status;
  return done.get();
}

void EngineLoop::completeRemotePrefill(SeqId id, TokenOutput first) {
  (void)post([this, id, first = std::move(first)] {
    if (!callbacks_.contains(id)) return;
    if (first.token < 0 || first.token >= vocab_size_) {
      (void)engine_->engine().failRemotePrefill(id);
      return;
    }
    absl::StatusOr<TokenOutput> out = engine_->engine().completeRemotePrefill(id, first);
    if (out.ok()) {
      deliver(*out);
    } else if (absl::IsInvalidArgument(out.status())) {
      // the grammar refused P's token: prefill and sample here instead.
      (void)engine_->engine().failRemotePrefill(id);
    }
  });
}

void EngineLoop::failRemotePrefill(SeqId id) {
  (void)post([this, id] { (void)engine_->engine().failRemotePrefill(id); });
}

EngineLoopStats EngineLoop::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

std::vector<kvcache::KvTierStats> EngineLoop::kvTierStats() const {
  const kvcache::KvTierChain* tiers = engine_->kvTiers();
  return tiers != nullptr ? tiers->stats() : std::vector<kvcache::KvTierStats>{};
}

void EngineLoop::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
  kv_events_.wakeAll();
}

void EngineLoop::run() {
  Engine& engine = engine_->engine();
  std::vector<Task> tasks;
  while (true) {
    bool stopping;
    {
      std::unique_lock lock(mu_);
      // sleep when there is nothing to compute, or when the last step found
      // nothing it could compute and only a task can change that.
      wake_.wait(lock, [&] {
        return stopping_ || !tasks_.empty() || (engine.hasSchedulable() && !engine.stalled());
      });
      stopping = stopping_;
      tasks.swap(tasks_);
    }
    for (Task& task : tasks) task();
    tasks.clear();
    if (stopping) break;
    const std::vector<TokenOutput> outputs = engine.step();
    reportProgress();
    for (const TokenOutput& output : outputs) deliver(output);
    publishStats();
  }
  // end whatever is left.
  std::vector<SeqId> left;
  for (const auto& [id, callback] : callbacks_) left.push_back(id);
  for (SeqId id : left) cancelNow(id);
  std::vector<SeqId> held;
  for (const auto& [id, progress] : prefills_) held.push_back(id);
  for (SeqId id : held) engine.releaseHeld(id);
  prefills_.clear();
  publishStats();
}

void EngineLoop::admit(SeqId id, std::vector<int32_t> prompt, SamplingParams params,
                       OutputCallback callback, bool hold_blocks_on_finish) {
  absl::Status status = engine_->engine().addRequest(id, std::move(prompt), std::move(params),
                                                     hold_blocks_on_finish);
  if (status.ok()) {
    callbacks_.emplace(id, std::move(callback));
  } else {
    // checked before queuing; only a duplicate id gets here.
    TokenOutput failed;
    failed.id = id;
    failed.token = -1;
    failed.finish_reason = FinishReason::kError;
    callback(failed);
  }
}

absl::StatusOr<EngineLoop::KvAllocation> EngineLoop::admitAwaitingKv(
    SeqId id, std::vector<int32_t> prompt, SamplingParams params, OutputCallback callback) {
  Engine& engine = engine_->engine();
  absl::StatusOr<int> cached = engine.admitAwaitingKv(id, std::move(prompt), std::move(params));
  if (!cached.ok()) return cached.status();
  callbacks_.emplace(id, std::move(callback));
  KvAllocation allocation;
  allocation.num_cached_tokens = *cached;
  const auto table = engine.kvCache().blockTable(id);
  allocation.block_ids.assign(table.begin(), table.end());
  return allocation;
}

void EngineLoop::cancelNow(SeqId id) {
  Engine& engine = engine_->engine();
  if (engine.releaseHeld(id)) {
    // a held prefill already had its final output.
    prefills_.erase(id);
    return;
  }
  prefills_.erase(id);
  if (!callbacks_.contains(id)) return;
  (void)engine.abort(id);
  finishWith(id, FinishReason::kAbort);
}

void EngineLoop::reportProgress() {
  const Engine& engine = engine_->engine();
  for (auto it = prefills_.begin(); it != prefills_.end();) {
    PrefillProgress& p = it->second;
    const SeqId id = it->first;
    const Request* req = engine.scheduler().findRequest(id);
    const bool held = req == nullptr && engine.isHeld(id);
    if (req == nullptr && !held) {
      // failed or cancelled: no more progress.
      it = prefills_.erase(it);
      continue;
    }
    const int computed =
        held ? p.num_prompt_tokens : std::min(req->num_computed_tokens, p.num_prompt_tokens);
    if (computed > p.reported) {
      p.reported = computed;
      if (p.on_progress) p.on_progress(computed, engine.kvCache().blockTable(id));
    }
    // a held prefill stays listed so that stop() can free it.
    ++it;
  }
}

void EngineLoop::deliver(const TokenOutput& output) {
  auto it = callbacks_.find(output.id);
  if (it == callbacks_.end()) return;
  it->second(output);
  if (output.finished()) callbacks_.erase(it);
}

void EngineLoop::finishWith(SeqId id, FinishReason reason) {
  TokenOutput last;
  last.id = id;
  last.token = -1;
  last.finish_reason = reason;
  deliver(last);
}

void EngineLoop::publishStats() {
  const Engine& engine = engine_->engine();
  EngineLoopStats s;
  s.num_running = engine.scheduler().numRunning();
  s.num_waiting = engine.scheduler().numWaiting();
  s.num_blocks = engine.kvCache().numBlocks();
  s.num_free_blocks = engine.kvCache().numFreeBlocks();
  s.num_prefill_tokens_queued = engine.scheduler().numPrefillTokensQueued();
  s.num_awaiting_kv = engine.scheduler().numAwaitingKv();
  s.num_held_prefills = engine.scheduler().numHeld();
  s.num_onboarding = engine.scheduler().numOnboarding();
  s.num_onboarded_tokens = engine.kvCache().onboardedTokens();
  std::lock_guard lock(mu_);
  s.num_steps = stats_.num_steps + 1;
  stats_ = s;
}

}  // namespace tandem::engine
