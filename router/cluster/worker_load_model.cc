#include "router/cluster/worker_load_model.h"

#include <algorithm>

namespace tandem::router::cluster {

WorkerLoadModel::WorkerLoadModel(WorkerLoadModelOptions options) : options_(options) {}

WorkerLoadModel::Worker& WorkerLoadModel::workerLocked(const std::string& address) {
  auto [it, inserted] = workers_.try_emplace(address);
  if (inserted) {
    it->second.prefill_rate = options_.default_prefill_tokens_per_s;
    it->second.decode_step = options_.default_decode_s_per_step;
  }
  return it->second;
}

void WorkerLoadModel::observeStats(const std::string& address, double queued_prefill_tokens,
                                   int64_t running, int64_t active_blocks) {
  std::lock_guard lock(mu_);
  Worker& w = workerLocked(address);
  if (w.raw_queued == queued_prefill_tokens && w.raw_running == running && w.raw_blocks == active_blocks) {
    return;
  }
  w.raw_queued = queued_prefill_tokens;
  w.raw_running = running;
  w.raw_blocks = active_blocks;
  w.reported_queued = std::max(0.0, queued_prefill_tokens);
  w.reported_running = std::max<int64_t>(0, running);
  w.reported_blocks = std::max<int64_t>(0, active_blocks);
}

WorkerLoad WorkerLoadModel::loadLocked(const Worker& w, double now) const {
  WorkerLoad load;
  load.queued_prefill_tokens = std::max(w.own_queued, w.reported_queued);
  load.running = std::max(w.own_running, w.reported_running);
  load.active_blocks = std::max(w.own_blocks, w.reported_blocks);
  load.decode_s_per_step = w.decode_step;
  load.prefill_tokens_per_s = w.prefill_rate;
  if (!w.waiting.empty()) {
    // the oldest request still waiting: had the worker run at the learned
    // rate it would have its first token; the rate is at most its work / age.
    const auto it = requests_.find(w.waiting.begin()->second);
    const double age = now - w.waiting.begin()->first;
    if (it != requests_.end() && age > 0) {
      const double expected = it->second.work / w.prefill_rate;
      // twice the expected time plus a decode step of slack before it counts.
      if (age > 2 * expected + w.decode_step) {
        load.prefill_tokens_per_s = std::min(w.prefill_rate, std::max(it->second.work, 1.0) / age);
      }
    }
  }
  return load;
}

WorkerLoad WorkerLoadModel::load(const std::string& address, double now) const {
  std::lock_guard lock(mu_);
  auto it = workers_.find(address);
  if (it == workers_.end()) {
    return WorkerLoad{.prefill_tokens_per_s = options_.default_prefill_tokens_per_s,
                      .decode_s_per_step = options_.default_decode_s_per_step};
  }
  return loadLocked(it->second, now);
}

void WorkerLoadModel::onRouted(uint64_t key, const std::string& address, int64_t prefill_tokens,
                               int64_t blocks, double now) {
  std::lock_guard lock(mu_);
  Worker& w = workerLocked(address);
  Request r;
  r.address = address;
  r.prefill_tokens = std::max<int64_t>(0, prefill_tokens);
  r.blocks = std::max<int64_t>(0, blocks);
  r.work = std::max(w.own_queued, w.reported_queued) + static_cast<double>(r.prefill_tokens);
  r.routed_at = now;
  w.own_queued += static_cast<double>(r.prefill_tokens);
  ++w.own_running;
  w.own_blocks += r.blocks;
  w.waiting.emplace(now, key);
  requests_[key] = std::move(r);
}

void WorkerLoadModel::onFirstToken(uint64_t key, double now) {
  std::lock_guard lock(mu_);
  auto it = requests_.find(key);
  if (it == requests_.end() || it->second.first_token_at >= 0) return;
  Request& r = it->second;
  r.first_token_at = now;
  auto wit = workers_.find(r.address);
  if (wit == workers_.end()) return;
  Worker& w = wit->second;
  w.own_queued = std::max(0.0, w.own_queued - static_cast<double>(r.prefill_tokens));
  for (auto [b, e] = w.waiting.equal_range(r.routed_at); b != e; ++b) {
    if (b->second == key) {
      w.waiting.erase(b);
      break;
    }
  }
  const double ttft = now - r.routed_at;
  if (r.work >= static_cast<double>(options_.min_prefill_sample_tokens) && ttft > 0) {
    w.prefill_rate += options_.sample_weight * (r.work / ttft - w.prefill_rate);
  }
}

void WorkerLoadModel::onFinished(uint64_t key, int64_t output_tokens, double now) {
  std::lock_guard lock(mu_);
  auto it = requests_.find(key);
  if (it == requests_.end()) return;
  Request r = std::move(it->second);
  requests_.erase(it);
  auto wit = workers_.find(r.address);
  if (wit == workers_.end()) return;
  Worker& w = wit->second;
  if (r.first_token_at < 0) {
    w.own_queued = std::max(0.0, w.own_queued - static_cast<double>(r.prefill_tokens));
    for (auto [b, e] = w.waiting.equal_range(r.routed_at); b != e; ++b) {
      if (b->second == key) {
        w.waiting.erase(b);
        break;
      }
    }
  } else if (output_tokens > 1 && now > r.first_token_at) {
    const double step = (now - r.first_token_at) / static_cast<double>(output_tokens - 1);
    w.decode_step += options_.sample_weight * (step - w.decode_step);
  }
  w.own_running = std::max<int64_t>(0, w.own_running - 1);
  w.own_blocks = std::max<int64_t>(0, w.own_blocks - r.blocks);
}

void WorkerLoadModel::retainWorkers(const std::function<bool(const std::string&)>& keep) {
  std::lock_guard lock(mu_);
  std::erase_if(workers_, [&](const auto& entry) { return !keep(entry.first); });
}

size_t WorkerLoadModel::numWorkers() const {
  std::lock_guard lock(mu_);
  return workers_.size();
}

}  // namespace tandem::router::cluster
