#include "bench/router_sim/sim_worker.h"

#include <algorithm>
#include <cmath>

namespace tandem::bench {

SimWorker::SimWorker(std::string address, SimWorkerConfig config, router::cluster::KvIndex* index)
    : address_(std::move(address)), config_(config), index_(index) {}

void SimWorker::unlink(int n) {
  Node& node = nodes_[n];
  if (node.prev >= 0) nodes_[node.prev].next = node.next; else head_ = node.next;
  if (node.next >= 0) nodes_[node.next].prev = node.prev; else tail_ = node.prev;
}

void SimWorker::pushFront(int n) {
  nodes_[n].prev = -1;
  nodes_[n].next = head_;
  if (head_ >= 0) nodes_[head_].prev = n;
  head_ = n;
  if (tail_ < 0) tail_ = n;
}

void SimWorker::touch(int n) {
  if (n == head_) return;
  unlink(n);
  pushFront(n);
}

void SimWorker::emitStored(kvcache::BlockHash hash) {
  event_.Clear();
  event_.set_event_id(next_event_id_++);
  event_.mutable_stored()->set_hash(hash);
  index_->applyEvent(address_, event_);
}

void SimWorker::emitRemoved(kvcache::BlockHash hash) {
  event_.Clear();
  event_.set_event_id(next_event_id_++);
  event_.mutable_removed()->set_hash(hash);
  index_->applyEvent(address_, event_);
}

void SimWorker::insertBlock(kvcache::BlockHash hash) {
  if (auto it = cache_.find(hash); it != cache_.end()) {
    touch(it->second);
    return;
  }
  if (static_cast<int64_t>(cache_.size()) >= config_.capacity_blocks && tail_ >= 0) {
    const int victim = tail_;
    unlink(victim);
    cache_.erase(nodes_[victim].hash);
    emitRemoved(nodes_[victim].hash);
    free_.push_back(victim);
  }
  int n;
  if (!free_.empty()) {
    n = free_.back();
    free_.pop_back();
  } else {
    n = static_cast<int>(nodes_.size());
    nodes_.push_back({});
  }
  nodes_[n].hash = hash;
  pushFront(n);
  cache_.emplace(hash, n);
  emitStored(hash);
}

int64_t SimWorker::enqueue(int id, const SimRequest& request, double now) {
  if (static_cast<int>(requests_.size()) <= id) requests_.resize(id + 1, nullptr);
  requests_[id] = &request;
  // the leading blocks the cache holds (kept fresh until the prefill ends).
  int64_t hit = 0;
  for (kvcache::BlockHash h : request.hashes) {
    auto it = cache_.find(h);
    if (it == cache_.end()) break;
    touch(it->second);
    ++hit;
  }
  const int64_t cached = std::min(hit * config_.block_size, request.prompt_tokens);
  const int64_t to_prefill = std::max<int64_t>(1, request.prompt_tokens - cached);
  queue_.push_back({id, to_prefill});
  queued_tokens_ += to_prefill;
  if (!active_) {
    planStep(now);
  } else if (step_count_ > 1) {
    // split the run of decode steps at the step in progress.
    const int64_t done = std::min<int64_t>(step_count_ - 1,
                                           static_cast<int64_t>(std::floor((now - step_start_) / step_dur_)));
    if (done > 0) {
      for (Running& r : running_) r.remaining -= done;
      busy_s_ += static_cast<double>(done) * step_dur_;
      step_start_ += static_cast<double>(done) * step_dur_;
    }
    step_count_ = 1;
  }
  return cached;
}

void SimWorker::planStep(double now) {
  chunk_.clear();
  if (queue_.empty() && running_.empty()) {
    active_ = false;
    return;
  }
  active_ = true;
  step_start_ = now;
  int64_t budget = config_.chunk_tokens;
  int64_t chunk_tokens = 0;
  for (const Queued& q : queue_) {
    if (budget <= 0) break;
    const int64_t take = std::min(budget, q.remaining);
    chunk_.emplace_back(q.id, take);
    budget -= take;
    chunk_tokens += take;
  }
  const double batch = static_cast<double>(running_.size());
  step_dur_ = (running_.empty() ? 0 : config_.decode_s_per_step * (1 + batch / config_.batch_knee)) +
              static_cast<double>(chunk_tokens) / config_.prefill_tokens_per_s;
  step_count_ = 1;
  if (chunk_.empty()) {
    int64_t k = running_.front().remaining;
    for (const Running& r : running_) k = std::min(k, r.remaining);
    step_count_ = std::max<int64_t>(1, k);
  }
}

void SimWorker::prefillDone(int id, double now, std::vector<SimOutcome>& out) {
  const SimRequest& r = *requests_[id];
  for (kvcache::BlockHash h : r.hashes) insertBlock(h);
  out.push_back({SimOutcome::kFirstToken, id, now});
  if (r.output_tokens <= 1) {
    out.push_back({SimOutcome::kFinished, id, now});
  } else {
    running_.push_back({id, r.output_tokens - 1});
    running_blocks_ += static_cast<int64_t>(r.hashes.size());
  }
}

void SimWorker::completeStep(std::vector<SimOutcome>& out) {
  const double end = step_start_ + step_dur_ * static_cast<double>(step_count_);
  busy_s_ += step_dur_ * static_cast<double>(step_count_);
  // decode: every running request got step_count_ tokens.
  for (size_t i = 0; i < running_.size();) {
    running_[i].remaining -= step_count_;
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
    Queued& q = queue_.front();
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
  while (active_ && nextEventTime() <= t) completeStep(out);
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
  s.set_last_event_id(next_event_id_ - 1);
  return s;
}

}  // namespace tandem::bench
