#include "server/engine/engine_loop.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace tandem::engine {

EngineLoop::EngineLoop(LocalEnginePtr engine)
    : engine_(std::move(engine)),
      vocab_size_(engine_->weights().config().vocab_size) {
  {
    std::lock_guard lock(mu_);
    stats_.num_blocks = engine_->numBlocks();
    stats_.num_free_blocks = engine_->numBlocks();
  }
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() { stop(); }

absl::Status EngineLoop::submit(SeqId id, std::vector<int32_t> prompt, SamplingParams params,
                                OutputCallback callback) {
  // the engine's checks read only immutable configuration: safe here.
  absl::Status status =
      engine_->engine().checkRequest(static_cast<int64_t>(prompt.size()), params);
  if (!status.ok()) return status;
  for (int32_t token : prompt) {
    if (token < 0 || token >= vocab_size_) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "prompt token id %d is outside the vocabulary [0, %d)", token, vocab_size_));
    }
  }
  {
    std::lock_guard lock(mu_);
    if (stopping_) return absl::FailedPreconditionError("the engine is shutting down");
    submissions_.push_back({id, std::move(prompt), std::move(params), std::move(callback)});
  }
  wake_.notify_one();
  return absl::OkStatus();
}

void EngineLoop::cancel(SeqId id) {
  {
    std::lock_guard lock(mu_);
    cancels_.push_back(id);
  }
  wake_.notify_one();
}

EngineLoopStats EngineLoop::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void EngineLoop::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void EngineLoop::run() {
  Engine& engine = engine_->engine();
  std::vector<Submission> submissions;
  std::vector<SeqId> cancels;
  while (true) {
    bool stopping;
    {
      std::unique_lock lock(mu_);
      // sleep only when there is nothing to compute.
      wake_.wait(lock, [&] {
        return stopping_ || !submissions_.empty() || !cancels_.empty() ||
               engine.hasUnfinished();
      });
      stopping = stopping_;
      submissions.swap(submissions_);
      cancels.swap(cancels_);
    }
    admit(submissions, cancels);
    if (stopping) break;
    for (const EngineOutput& output : engine.step()) deliver(output);
    publishStats();
  }
  // end whatever is left.
  std::vector<SeqId> left;
  for (const auto& [id, callback] : callbacks_) left.push_back(id);
  for (SeqId id : left) {
    (void)engine.abort(id);
    finishWith(id, FinishReason::kAbort);
  }
  publishStats();
}

void EngineLoop::admit(std::vector<Submission>& submissions, std::vector<SeqId>& cancels) {
  Engine& engine = engine_->engine();
  for (Submission& s : submissions) {
    absl::Status status = engine.addRequest(s.id, std::move(s.prompt), std::move(s.params));
    if (status.ok()) {
      callbacks_.emplace(s.id, std::move(s.callback));
    } else {
      // checked in submit(); only a duplicate id gets here.
      EngineOutput failed;
      failed.id = s.id;
      failed.token = -1;
      failed.finish_reason = FinishReason::kError;
      s.callback(failed);
    }
  }
  submissions.clear();
  for (SeqId id : cancels) {
    if (!callbacks_.contains(id)) continue;
    (void)engine.abort(id);
    finishWith(id, FinishReason::kAbort);
  }
  cancels.clear();
}

void EngineLoop::deliver(const EngineOutput& output) {
  auto it = callbacks_.find(output.id);
  if (it == callbacks_.end()) return;
  it->second(output);
  if (output.finished()) callbacks_.erase(it);
}

void EngineLoop::finishWith(SeqId id, FinishReason reason) {
  EngineOutput last;
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
  std::lock_guard lock(mu_);
  s.num_steps = stats_.num_steps + 1;
  stats_ = s;
}

}  // namespace tandem::engine
