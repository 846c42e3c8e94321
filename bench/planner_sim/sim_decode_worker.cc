#include "bench/planner_sim/sim_decode_worker.h"

#include <algorithm>

namespace tandem::bench {

SimDecodeWorker::SimDecodeWorker(std::string address, const planner::WorkerProfile* profile, int block_size,
                                 router::cluster::KvIndex* index)
    : address_(std::move(address)),
      profile_(profile),
      block_size_(block_size),
      capacity_tokens_(static_cast<int64_t>(profile->kvCapacityTokens())),
      cache_(address_, capacity_tokens_ / block_size_, index) {
  index->setWorkerCapacity(address_, capacity_tokens_ / block_size_);
}

int64_t SimDecodeWorker::cachedTokens(const SimRequest& r) {
  return std::min(cache_.leadingHits(r.hashes) * block_size_, r.prompt_tokens);
}

void SimDecodeWorker::addLocal(int id, const SimRequest* r, int64_t new_tokens, double now) {
  if (static_cast<int>(requests_.size()) <= id) requests_.resize(id + 1, nullptr);
  requests_[id] = r;
  local_.push_back({id, std::max<int64_t>(1, new_tokens)});
  if (step_.active) splitRun(now); else planStep(now);
}

void SimDecodeWorker::addRemote(int id, const SimRequest* r, double now) {
  if (static_cast<int>(requests_.size()) <= id) requests_.resize(id + 1, nullptr);
  requests_[id] = r;
  cache_.store(r->hashes);
  waiting_.push_back(id);
  if (step_.active) splitRun(now); else planStep(now);
}

void SimDecodeWorker::splitRun(double now) {
  const int64_t done = step_.splitAt(now);
  for (Running& r : running_) {
    r.remaining -= done;
    r.context += done;
  }
  used_tokens_ += done * static_cast<int64_t>(running_.size());
}

void SimDecodeWorker::planStep(double now) {
  // admit the waiting ones the batch and the KV have room for (a lone
  // request always gets in).
  while (!waiting_.empty() && static_cast<int>(running_.size()) < profile_->maxBatch()) {
    const SimRequest& r = *requests_[waiting_.front()];
    const int64_t final_len = r.prompt_tokens + r.output_tokens;
    if (!running_.empty() && reserved_tokens_ + final_len > capacity_tokens_) break;
    running_.push_back({{waiting_.front(), r.output_tokens - 1}, r.prompt_tokens + 1, final_len});
    reserved_tokens_ += final_len;
    used_tokens_ += r.prompt_tokens + 1;
    waiting_.pop_front();
  }
  chunk_ = local_.empty() ? 0 : std::min<int64_t>(kChunkTokens, local_.front().remaining);
  if (running_.empty() && chunk_ == 0) {
    step_.active = false;
    return;
  }
  step_.active = true;
  step_.start = now;
  step_.duration = 0;
  if (!running_.empty()) {
    const double batch = static_cast<double>(running_.size());
    step_.duration += profile_->decodeItlMs(batch, static_cast<double>(used_tokens_) / batch) / 1000;
  }
  if (chunk_ > 0) {
    const SimRequest& r = *requests_[local_.front().id];
    step_.duration += profile_->prefillSeconds(static_cast<double>(chunk_), static_cast<double>(r.prompt_tokens));
  }
  step_.count = 1;
  if (chunk_ == 0) {
    int64_t k = kMaxRunSteps;
    for (const Running& r : running_) k = std::min(k, r.remaining);
    step_.count = std::max<int64_t>(1, k);
  }
}

void SimDecodeWorker::completeStep(std::vector<SimOutcome>& out) {
  const double end = step_.end();
  for (size_t i = 0; i < running_.size();) {
    Running& r = running_[i];
    r.remaining -= step_.count;
    r.context += step_.count;
    used_tokens_ += step_.count;
    if (r.remaining <= 0) {
      out.push_back({SimOutcome::kFinished, r.id, end});
      used_tokens_ -= r.context;
      reserved_tokens_ -= r.reserved;
      r = running_.back();
      running_.pop_back();
    } else {
      ++i;
    }
  }
  if (chunk_ > 0) {
    SimSequence& l = local_.front();
    l.remaining -= chunk_;
    if (l.remaining <= 0) {
      const int id = l.id;
      local_.pop_front();
      const SimRequest& r = *requests_[id];
      cache_.store(r.hashes);
      out.push_back({SimOutcome::kFirstToken, id, end});
      if (r.output_tokens <= 1) {
        out.push_back({SimOutcome::kFinished, id, end});
      } else {
        waiting_.push_back(id);
      }
    }
  }
  planStep(end);
}

void SimDecodeWorker::advanceTo(double t, std::vector<SimOutcome>& out) {
  while (step_.active && step_.end() <= t) completeStep(out);
}

double SimDecodeWorker::kvUtilization() const {
  return static_cast<double>(used_tokens_) / static_cast<double>(capacity_tokens_);
}

tandem::v1::WorkerStats SimDecodeWorker::stats() const {
  tandem::v1::WorkerStats s;
  const int64_t blocks = capacity_tokens_ / block_size_;
  const int64_t active = (reserved_tokens_ + block_size_ - 1) / block_size_;
  int64_t local_tokens = 0;
  for (const SimSequence& l : local_) local_tokens += l.remaining;
  s.set_worker_id(address_);
  s.set_num_running(static_cast<int32_t>(running_.size()));
  s.set_num_waiting(waiting());
  s.set_num_blocks(static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX)));
  s.set_num_free_blocks(static_cast<int32_t>(std::clamp<int64_t>(blocks - active, 0, INT32_MAX)));
  s.set_num_active_blocks(static_cast<int32_t>(std::min<int64_t>(active, INT32_MAX)));
  s.set_num_prefill_tokens_queued(local_tokens);
  s.set_last_event_id(cache_.lastEventId());
  return s;
}

}  // namespace tandem::bench
