#include "bench/router_sim/sim_worker.h"

#include <algorithm>

namespace tandem::bench {

SimWorker::SimWorker(std::string address, SimWorkerConfig config, router::cluster::KvIndex* index)
    : address_(std::move(address)), config_(config), cache_(address_, config.capacity_blocks, index) {}

int64_t SimWorker::enqueue(int id, const SimRequest& request, double now) {
  if (static_cast<int>(requests_.size()) <= id) requests_.resize(id + 1, nullptr);
  requests_[id] = &request;
  // the leading blocks the cache holds (kept fresh until the prefill ends).
  const int64_t cached = std::min(cache_.leadingHits(request.hashes) * config_.block_size, request.prompt_tokens);
  const int64_t to_prefill = std::max<int64_t>(1, request.prompt_tokens - cached);
  queue_.push_back({id, to_prefill});
  queued_tokens_ += to_prefill;
  if (!step_.active) {
    planStep(now);
  } else if (const int64_t done = step_.splitAt(now); done > 0) {
    // the run of decode steps ends at the step in progress.
    for (SimSequence& r : running_) r.remaining -= done;
    busy_s_ += static_cast<double>(done) * step_.duration;
  }
  return cached;
}

void SimWorker::planStep(double now) {
  chunk_.clear();
  if (queue_.empty() && running_.empty()) {
    step_.active = false;
    return;
  }
  step_.active = true;
  step_.start = now;
  int64_t budget = config_.chunk_tokens;
  int64_t chunk_tokens = 0;
  for (const SimSequence& q : queue_) {
    if (budget <= 0) break;
    const int64_t take = std::min(budget, q.remaining);
    chunk_.emplace_back(q.id, take);
    budget -= take;
    chunk_tokens += take;
  }
  const double batch = static_cast<double>(running_.size());
  step_.duration = (running_.empty() ? 0 : config_.decode_s_per_step * (1 + batch / config_.batch_knee)) +
              static_cast<double>(chunk_tokens) / config_.prefill_tokens_per_s;
  step_.count = 1;
  if (chunk_.empty()) {
    int64_t k = running_.front().remaining;
    for (const SimSequence& r : running_) k = std::min(k, r.remaining);
    step_.count = std::max<int64_t>(1, k);
  }
}

void SimWorker::prefillDone(int id, double now, std::vector<SimOutcome>& out) {
  const SimRequest& r = *requests_[id];
  cache_.store(r.hashes);
  out.push_back({SimOutcome::kFirstToken, id, now});
  if (r.output_tokens <= 1) {
    out.push_back({SimOutcome::kFinished, id, now});
  } else {
    running_.push_back({id, r.output_tokens - 1});
    running_blocks_ += static_cast<int64_t>(r.hashes.size());
  }
}

void SimWorker::completeStep(std::vector<SimOutcome>& out) {
  const double end = step_.end();
  busy_s_ += step_.duration * static_cast<double>(step_.count);
  // decode: every running request got step_.count tokens.
  for (size_t i = 0; i < running_.size();) {
    running_[i].remaining -= step_.count;
    if (running_[i].remaining <= 0) {
      out.push_back({SimOutcome::kFinished, running_[i].id, end});
      running_blocks_ -= static_cast<int64_t>(requests_[running_[i].id]->hashes.size());
      running_[i] = running_.back();
      running_.pop_back();
    } else {
      ++i;
    }
  }
  // prefill: the chunk advanced the queue's first requests.
  for (const auto& [id, tokens] : chunk_) {
    SimSequence& q = queue_.front();
    q.remaining -= tokens;
    queued_tokens_ -= tokens;
    if (q.remaining <= 0) {
      queue_.pop_front();
      prefillDone(id, end, out);
    }
  }
  planStep(end);
}

void SimWorker::advanceTo(double t, std::vector<SimOutcome>& out) {
  while (step_.active && step_.end() <= t) completeStep(out);
}

tandem::v1::WorkerStats SimWorker::stats() const {
  tandem::v1::WorkerStats s;
  s.set_worker_id(address_);
  s.set_num_running(static_cast<int32_t>(running_.size()));
  s.set_num_waiting(static_cast<int32_t>(queue_.size()));
  s.set_num_blocks(static_cast<int32_t>(std::min<int64_t>(config_.capacity_blocks, INT32_MAX)));
  s.set_num_free_blocks(static_cast<int32_t>(std::max<int64_t>(0, config_.capacity_blocks - running_blocks_)));
  s.set_num_active_blocks(static_cast<int32_t>(std::min<int64_t>(running_blocks_, INT32_MAX)));
  s.set_num_prefill_tokens_queued(queued_tokens_);
  s.set_last_event_id(cache_.lastEventId());
  return s;
}

}  // namespace tandem::bench
