#include "bench/router_sim/sim_worker.h"

#include <algorithm>
#include <climits>

namespace tandem::bench {

SimWorkerModel linearModel(const SimWorkerConfig& config) {
  SimWorkerModel m;
  m.block_size = config.block_size;
  m.kv_capacity_tokens = config.capacity_blocks * config.block_size;
  m.chunk_tokens = config.chunk_tokens;
  m.decode_step_s = [c = config](double batch, double) { return c.decode_s_per_step * (1 + batch / c.batch_knee); };
  m.prefill_s = [rate = config.prefill_tokens_per_s](double tokens, double) { return tokens / rate; };
  return m;
}

SimWorker::SimWorker(std::string address, SimWorkerModel model, router::cluster::KvIndex* index)
    : address_(std::move(address)),
      model_(std::move(model)),
      capacity_tokens_(model_.kv_capacity_tokens),
      cache_(address_, capacity_tokens_ / model_.block_size, index) {
  index->setWorkerCapacity(address_, capacity_tokens_ / model_.block_size);
}

int64_t SimWorker::cachedTokens(const SimRequest& r) {
  return std::min(cache_.leadingHits(r.hashes) * model_.block_size, r.prompt_tokens);
}

void SimWorker::remember(int id, const SimRequest* r) {
  if (static_cast<int>(requests_.size()) <= id) requests_.resize(id + 1, nullptr);
  requests_[id] = r;
}

void SimWorker::addLocal(int id, const SimRequest* r, int64_t new_tokens, double now) {
  remember(id, r);
  const int64_t tokens = std::max<int64_t>(1, new_tokens);
  local_.push_back({id, tokens});
  local_tokens_ += tokens;
  if (step_.active) splitRun(now); else planStep(now);
}

void SimWorker::addRemote(int id, const SimRequest* r, double now) {
  remember(id, r);
  cache_.store(r->hashes);
  waiting_.push_back(id);
  if (step_.active) splitRun(now); else planStep(now);
}

void SimWorker::splitRun(double now) {
  const int64_t done = step_.splitAt(now);
  for (Running& r : running_) {
    r.remaining -= done;
    r.context += done;
  }
  used_tokens_ += done * static_cast<int64_t>(running_.size());
  busy_s_ += static_cast<double>(done) * step_.duration;
}

void SimWorker::planStep(double now) {
  // admit the waiting ones the batch (and, reserving, the KV) has room for;
  // a lone request always gets in.
  while (!waiting_.empty() && static_cast<int>(running_.size()) < model_.max_batch) {
    const SimRequest& r = *requests_[waiting_.front()];
    const int64_t final_len = r.prompt_tokens + r.output_tokens;
    if (model_.reserve_kv && !running_.empty() && reserved_tokens_ + final_len > capacity_tokens_) break;
    const auto blocks = static_cast<int64_t>(r.hashes.size());
    running_.push_back({{waiting_.front(), r.output_tokens - 1}, r.prompt_tokens + 1, final_len, blocks});
    reserved_tokens_ += final_len;
    used_tokens_ += r.prompt_tokens + 1;
    running_blocks_ += blocks;
    waiting_.pop_front();
  }
  chunk_.clear();
  int64_t chunk_tokens = 0;
  for (const SimSequence& l : local_) {
    if (chunk_tokens >= model_.chunk_tokens) break;
    const int64_t take = std::min<int64_t>(model_.chunk_tokens - chunk_tokens, l.remaining);
    chunk_.emplace_back(l.id, take);
    chunk_tokens += take;
    if (!model_.pack_prefills) break;
  }
  if (running_.empty() && chunk_.empty()) {
    step_.active = false;
    return;
  }
  step_.active = true;
  step_.start = now;
  step_.duration = 0;
  if (!running_.empty()) {
    const double batch = static_cast<double>(running_.size());
    step_.duration += model_.decode_step_s(batch, static_cast<double>(used_tokens_) / batch);
  }
  if (!chunk_.empty()) {
    const SimRequest& first = *requests_[chunk_.front().first];
    step_.duration += model_.prefill_s(static_cast<double>(chunk_tokens), static_cast<double>(first.prompt_tokens));
  }
  step_.count = 1;
  if (chunk_.empty()) {
    int64_t k = model_.max_run_steps;
    for (const Running& r : running_) k = std::min(k, r.remaining);
    step_.count = std::max<int64_t>(1, k);
  }
}

void SimWorker::completeStep(std::vector<SimOutcome>& out) {
  const double end = step_.end();
  busy_s_ += step_.duration * static_cast<double>(step_.count);
  // decode: every running request got step_.count tokens.
  for (size_t i = 0; i < running_.size();) {
    Running& r = running_[i];
    r.remaining -= step_.count;
    r.context += step_.count;
    used_tokens_ += step_.count;
    if (r.remaining <= 0) {
      out.push_back({SimOutcome::kFinished, r.id, end});
      used_tokens_ -= r.context;
      reserved_tokens_ -= r.reserved;
      running_blocks_ -= r.blocks;
      r = running_.back();
      running_.pop_back();
    } else {
      ++i;
    }
  }
  // prefill: the chunk advanced the queue's first prompts.
  for (const auto& [id, tokens] : chunk_) {
    SimSequence& l = local_.front();
    l.remaining -= tokens;
    local_tokens_ -= tokens;
    if (l.remaining > 0) continue;
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
  planStep(end);
}

void SimWorker::advanceTo(double t, std::vector<SimOutcome>& out) {
  while (step_.active && step_.end() <= t) completeStep(out);
}

double SimWorker::kvUtilization() const {
  return static_cast<double>(used_tokens_) / static_cast<double>(capacity_tokens_);
}

tandem::v1::WorkerStats SimWorker::stats() const {
  tandem::v1::WorkerStats s;
  const int64_t blocks = capacity_tokens_ / model_.block_size;
  const int64_t active =
      model_.reserve_kv ? (reserved_tokens_ + model_.block_size - 1) / model_.block_size : running_blocks_;
  s.set_worker_id(address_);
  s.set_num_running(static_cast<int32_t>(running_.size()));
  s.set_num_waiting(waiting());
  s.set_num_blocks(static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX)));
  s.set_num_free_blocks(static_cast<int32_t>(std::clamp<int64_t>(blocks - active, 0, INT32_MAX)));
  s.set_num_active_blocks(static_cast<int32_t>(std::min<int64_t>(active, INT32_MAX)));
  s.set_num_prefill_tokens_queued(local_tokens_);
  s.set_last_event_id(cache_.lastEventId());
  return s;
}

}  // namespace tandem::bench
