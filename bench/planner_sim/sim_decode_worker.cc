#include "bench/planner_sim/sim_decode_worker.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem::bench {

SimDecodeWorker::SimDecodeWorker(std::string address, const planner::WorkerProfile* profile, int block_size,
                                 router::cluster::KvIndex* index)
    : address_(std::move(address)),
      profile_(profile),
      block_size_(block_size),
      capacity_tokens_(static_cast<int64_t>(profile->kvCapacityTokens())),
      index_(index) {
  index_->setWorkerCapacity(address_, capacity_tokens_ / block_size_);
}

int64_t SimDecodeWorker::cachedTokens(const SimRequest& r) {
  int64_t hit = 0;
  for (kvcache::BlockHash h : r.hashes) {
    auto it = cache_.find(h);
    if (it == cache_.end()) break;
    lru_.splice(lru_.begin(), lru_, it->second);
    ++hit;
  }
  return std::min(hit * block_size_, r.prompt_tokens);
}

void SimDecodeWorker::store(const SimRequest& r) {
  const size_t capacity_blocks = static_cast<size_t>(capacity_tokens_ / block_size_);
  for (kvcache::BlockHash h : r.hashes) {
    if (auto it = cache_.find(h); it != cache_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      continue;
    }
    if (cache_.size() >= capacity_blocks && !lru_.empty()) {
      event_.Clear();
      event_.set_event_id(next_event_id_++);
      event_.mutable_removed()->set_hash(lru_.back());
      index_->applyEvent(address_, event_);
      cache_.erase(lru_.back());
      lru_.pop_back();
    }
    lru_.push_front(h);
    cache_.emplace(h, lru_.begin());
    event_.Clear();
    event_.set_event_id(next_event_id_++);
    event_.mutable_stored()->set_hash(h);
    index_->applyEvent(address_, event_);
  }
}

void SimDecodeWorker::addLocal(int id, const SimRequest* r, int64_t new_tokens, double now) {
  if (static_cast<int>(requests_.size()) <= id) requests_.resize(id + 1, nullptr);
  requests_[id] = r;
  local_.push_back({id, std::max<int64_t>(1, new_tokens)});
  if (active_) splitRun(now); else planStep(now);
}

void SimDecodeWorker::addRemote(int id, const SimRequest* r, double now) {
  if (static_cast<int>(requests_.size()) <= id) requests_.resize(id + 1, nullptr);
  requests_[id] = r;
  store(*r);
  waiting_.push_back(id);
  if (active_) splitRun(now); else planStep(now);
}

void SimDecodeWorker::splitRun(double now) {
  if (step_count_ <= 1) return;
  const int64_t done =
      std::min<int64_t>(step_count_ - 1, static_cast<int64_t>(std::floor((now - step_start_) / step_dur_)));
  if (done <= 0) {
    step_count_ = 1;
    return;
  }
  for (Running& r : running_) {
    r.remaining -= done;
    r.context += done;
  }
  used_tokens_ += done * static_cast<int64_t>(running_.size());
  step_start_ += static_cast<double>(done) * step_dur_;
  step_count_ = 1;
}

double SimDecodeWorker::nextEventTime() const {
  return active_ ? step_start_ + step_dur_ * static_cast<double>(step_count_)
                 : std::numeric_limits<double>::infinity();
}

void SimDecodeWorker::planStep(double now) {
  // admit the waiting ones the batch and the KV have room for (a lone
  // request always gets in).
  while (!waiting_.empty() && static_cast<int>(running_.size()) < profile_->maxBatch()) {
    const SimRequest& r = *requests_[waiting_.front()];
    const int64_t final_len = r.prompt_tokens + r.output_tokens;
    if (!running_.empty() && reserved_tokens_ + final_len > capacity_tokens_) break;
    running_.push_back({waiting_.front(), r.output_tokens - 1, r.prompt_tokens + 1, final_len});
    reserved_tokens_ += final_len;
    used_tokens_ += r.prompt_tokens + 1;
    waiting_.pop_front();
  }
  chunk_ = local_.empty() ? 0 : std::min<int64_t>(kChunkTokens, local_.front().remaining);
  if (running_.empty() && chunk_ == 0) {
    active_ = false;
    return;
  }
  active_ = true;
  step_start_ = now;
  step_dur_ = 0;
  if (!running_.empty()) {
    const double batch = static_cast<double>(running_.size());
    step_dur_ += profile_->decodeItlMs(batch, static_cast<double>(used_tokens_) / batch) / 1000;
  }
  if (chunk_ > 0) {
    const SimRequest& r = *requests_[local_.front().id];
    step_dur_ += profile_->prefillSeconds(static_cast<double>(chunk_), static_cast<double>(r.prompt_tokens));
  }
  step_count_ = 1;
  if (chunk_ == 0) {
    int64_t k = kMaxRunSteps;
    for (const Running& r : running_) k = std::min(k, r.remaining);
    step_count_ = std::max<int64_t>(1, k);
  }
}

void SimDecodeWorker::completeStep(std::vector<SimDecodeOutcome>& out) {
  const double end = nextEventTime();
  for (size_t i = 0; i < running_.size();) {
    Running& r = running_[i];
    r.remaining -= step_count_;
    r.context += step_count_;
    used_tokens_ += step_count_;
    if (r.remaining <= 0) {
      out.push_back({SimDecodeOutcome::kFinished, r.id, end});
      used_tokens_ -= r.context;
      reserved_tokens_ -= r.reserved;
      r = running_.back();
      running_.pop_back();
    } else {
      ++i;
    }
  }
  if (chunk_ > 0) {
    Local& l = local_.front();
    l.remaining -= chunk_;
    if (l.remaining <= 0) {
      const int id = l.id;
      local_.pop_front();
      const SimRequest& r = *requests_[id];
      store(r);
      out.push_back({SimDecodeOutcome::kFirstToken, id, end});
      if (r.output_tokens <= 1) {
        out.push_back({SimDecodeOutcome::kFinished, id, end});
      } else {
        waiting_.push_back(id);
      }
    }
  }
  planStep(end);
}

void SimDecodeWorker::advanceTo(double t, std::vector<SimDecodeOutcome>& out) {
  while (active_ && nextEventTime() <= t) completeStep(out);
}

double SimDecodeWorker::kvUtilization() const {
  return static_cast<double>(used_tokens_) / static_cast<double>(capacity_tokens_);
}

tandem::v1::WorkerStats SimDecodeWorker::stats() const {
  tandem::v1::WorkerStats s;
  const int64_t blocks = capacity_tokens_ / block_size_;
  const int64_t active = (reserved_tokens_ + block_size_ - 1) / block_size_;
  int64_t local_tokens = 0;
  for (const Local& l : local_) local_tokens += l.remaining;
  s.set_worker_id(address_);
  s.set_num_running(static_cast<int32_t>(running_.size()));
  s.set_num_waiting(waiting());
  s.set_num_blocks(static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX)));
  s.set_num_free_blocks(static_cast<int32_t>(std::clamp<int64_t>(blocks - active, 0, INT32_MAX)));
  s.set_num_active_blocks(static_cast<int32_t>(std::min<int64_t>(active, INT32_MAX)));
  s.set_num_prefill_tokens_queued(local_tokens);
  s.set_last_event_id(next_event_id_ - 1);
  return s;
}

}  // namespace tandem::bench
