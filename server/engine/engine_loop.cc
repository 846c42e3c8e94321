#include "server/engine/engine_loop.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "common/status.h"

namespace tandem::engine {

EngineLoop::EngineLoop(EngineAssemblyPtr engine)
    : engine_(std::move(engine)),
      vocab_size_(engine_->weights().config().vocab_size),
      remote_prefill_(vocab_size_),
      limits_(engine_->limits()) {
  {
    std::lock_guard lock(mu_);
    stats_.num_blocks = engine_->numBlocks();
    stats_.num_free_blocks = engine_->numBlocks();
  }
  engine_->engine().setKvEventListener(&kv_events_);
  engine_->engine().addKvConnector(&remote_prefill_);
  engine_->engine().addKvConnector(&held_prefills_);
  // a connector has KV that landed (a tier's loads, a remote prefill) or
  // blocks to release: step again.
  engine_->engine().setKvWakeup([this] { (void)post([] {}); });
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() {
  stop();
  // the log and the loop die before the engine (and its tiers' threads).
  engine_->engine().setKvWakeup(nullptr);
  engine_->engine().setKvEventListener(nullptr);
}

absl::Status EngineLoop::checkSubmission(const std::vector<int32_t>& prompt,
                                         const generation::SamplingParams& params) const {
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

absl::Status EngineLoop::submit(generation::SeqId id, std::vector<int32_t> prompt,
                                generation::SamplingParams params, OutputCallback callback,
                                KvConnector* kv_source) {
  absl::Status status = checkSubmission(prompt, params);
  if (!status.ok()) return status;
  return post([this, id, prompt = std::move(prompt), params = std::move(params),
               callback = std::move(callback), kv_source]() mutable {
    admit(id, std::move(prompt), std::move(params), std::move(callback), kv_source);
  });
}

void EngineLoop::cancel(generation::SeqId id) {
  (void)post([this, id] { cancelNow(id); });
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
    const std::vector<generation::TokenOutput> outputs = engine.step();
    for (const generation::TokenOutput& output : outputs) deliver(output);
    publishStats();
  }
  // end whatever is left.
  std::vector<generation::SeqId> left;
  for (const auto& [id, callback] : callbacks_) left.push_back(id);
  for (generation::SeqId id : left) cancelNow(id);
  for (generation::SeqId id : engine.scheduler().heldIds()) (void)engine.abort(id);
  publishStats();
}

void EngineLoop::admit(generation::SeqId id, std::vector<int32_t> prompt, generation::SamplingParams params,
                       OutputCallback callback, KvConnector* kv_source) {
  absl::Status status =
      engine_->engine().addRequest(id, std::move(prompt), std::move(params), kv_source);
  if (status.ok()) {
    callbacks_.emplace(id, std::move(callback));
  } else {
    // checked before queuing; only a duplicate id gets here.
    generation::TokenOutput failed;
    failed.id = id;
    failed.token = -1;
    failed.finish_reason = generation::FinishReason::kError;
    callback(failed);
  }
}

void EngineLoop::cancelNow(generation::SeqId id) {
  // a live request stops; a held one's blocks are freed (it had its final
  // output already).
  (void)engine_->engine().abort(id);
  if (callbacks_.contains(id)) finishWith(id, generation::FinishReason::kAbort);
}

void EngineLoop::deliver(const generation::TokenOutput& output) {
  auto it = callbacks_.find(output.id);
  if (it == callbacks_.end()) return;
  it->second(output);
  if (output.finished()) callbacks_.erase(it);
}

void EngineLoop::finishWith(generation::SeqId id, generation::FinishReason reason) {
  generation::TokenOutput last;
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
  s.num_awaiting_kv = remote_prefill_.numAwaiting();
  s.num_held_prefills = engine.scheduler().numHeld();
  if (const TierOnboardConnector* tiers = engine_->tierConnector()) {
    s.num_onboarding = tiers->numLoading();
    s.num_onboarded_tokens = tiers->onboardedTokens();
  }
  std::lock_guard lock(mu_);
  s.num_steps = stats_.num_steps + 1;
  stats_ = s;
}

}  // namespace tandem::engine
