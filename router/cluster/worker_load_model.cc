#include "router/cluster/worker_load_model.h"

#include <algorithm>

namespace tandem::router::cluster {

WorkerLoadModel::WorkerLoadModel(WorkerLoadModelOptions options) : options_(options) {}

double WorkerLoadModel::expectedTokensPerS(double prompt_tokens) const {
  const double rate = options_.expected_prefill_tokens_per_s && prompt_tokens > 0
                          ? options_.expected_prefill_tokens_per_s(prompt_tokens)
                          : options_.default_prefill_tokens_per_s;
  return std::max(rate, 1e-6);
}

WorkerLoadModel::Worker& WorkerLoadModel::workerLocked(const std::string& address) {
  auto [it, inserted] = workers_.try_emplace(address);
  if (inserted) {
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

WorkerLoad WorkerLoadModel::loadLocked(const Worker& w, double now, int64_t prompt_tokens) const {
  WorkerLoad load;
  load.queued_prefill_tokens = std::max(w.own_queued, w.reported_queued);
  load.running = std::max(w.own_running, w.reported_running);
  load.active_blocks = std::max(w.own_blocks, w.reported_blocks);
  load.decode_s_per_step = w.decode_step;
  double speed = w.speed;
  if (!w.waiting.empty()) {
    // the oldest request still waiting: had the worker run at the learned
    // speed it would have its first token; the speed is at most its
    // expected work / age.
    const auto it = requests_.find(w.waiting.begin()->second);
    const double age = now - w.waiting.begin()->first;
    if (it != requests_.end() && age > 0) {
      const double expected = it->second.work_s / w.speed;
      // twice the expected time plus a decode step of slack before it counts.
      if (age > 2 * expected + w.decode_step) {
        speed = std::min(w.speed, std::max(it->second.work_s, 1.0 / options_.default_prefill_tokens_per_s) / age);
      }
    }
  }
  // the queue: the router's own requests at their lengths' rates, what the
  // worker reports beyond them at the default rate.
  const double unattributed = std::max(0.0, w.reported_queued - w.own_queued);
  load.prefill_queue_s = (w.own_queued_s + unattributed / options_.default_prefill_tokens_per_s) / speed;
  load.prefill_tokens_per_s =
      prompt_tokens > 0
          ? expectedTokensPerS(static_cast<double>(prompt_tokens)) * speed
          : options_.default_prefill_tokens_per_s * speed;
  return load;
}

WorkerLoad WorkerLoadModel::load(const std::string& address, double now, int64_t prompt_tokens) const {
  std::lock_guard lock(mu_);
  auto it = workers_.find(address);
  if (it == workers_.end()) {
    return WorkerLoad{.prefill_tokens_per_s = prompt_tokens > 0
                                                  ? expectedTokensPerS(static_cast<double>(prompt_tokens))
                                                  : options_.default_prefill_tokens_per_s,
                      .decode_s_per_step = options_.default_decode_s_per_step};
  }
  return loadLocked(it->second, now, prompt_tokens);
}

void WorkerLoadModel::onRouted(uint64_t key, const std::string& address, int64_t prefill_tokens,
                               int64_t blocks, double now, int64_t prompt_tokens) {
  std::lock_guard lock(mu_);
  Worker& w = workerLocked(address);
  Request r;
  r.address = address;
  r.prefill_tokens = std::max<int64_t>(0, prefill_tokens);
  r.blocks = std::max<int64_t>(0, blocks);
  r.work = std::max(w.own_queued, w.reported_queued) + static_cast<double>(r.prefill_tokens);
  // timed at the whole prompt's rate (the cached part shapes it too).
  const double length = static_cast<double>(std::max(prompt_tokens, r.prefill_tokens));
  r.own_s = static_cast<double>(r.prefill_tokens) / expectedTokensPerS(length);
  const double unattributed = std::max(0.0, w.reported_queued - w.own_queued);
  r.work_s = w.own_queued_s + unattributed / options_.default_prefill_tokens_per_s + r.own_s;
  r.routed_at = now;
  w.own_queued += static_cast<double>(r.prefill_tokens);
  w.own_queued_s += r.own_s;
  ++w.own_running;
  w.own_blocks += r.blocks;
  if (r.prefill_tokens > 0) w.waiting.emplace(now, key);
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
  dequeueLocked(w, r, key);
  if (r.prefill_tokens <= 0) return;
  // the worker served this prefill since it came or since the previous
  // first token, whichever is later: queue and first-token overheads drop
  // out of a busy period's samples.
  const double served = now - std::max(r.routed_at, w.last_first_token_at);
  w.last_first_token_at = std::max(w.last_first_token_at, now);
  if (r.prefill_tokens >= options_.min_prefill_sample_tokens && served > 0) {
    // the factor: expected seconds / taken seconds over the recent samples
    // (their moving sums: a long prefill weighs more than a short one).
    w.expected_s += options_.prefill_sample_weight * (r.own_s - w.expected_s);
    w.taken_s += options_.prefill_sample_weight * (served - w.taken_s);
    if (w.taken_s > 0 && w.expected_s > 0) w.speed = w.expected_s / w.taken_s;
  }
}

void WorkerLoadModel::dequeueLocked(Worker& w, const Request& r, uint64_t key) {
  w.own_queued = std::max(0.0, w.own_queued - static_cast<double>(r.prefill_tokens));
  w.own_queued_s = w.own_queued <= 0 ? 0.0 : std::max(0.0, w.own_queued_s - r.own_s);
  for (auto [b, e] = w.waiting.equal_range(r.routed_at); b != e; ++b) {
    if (b->second == key) {
      w.waiting.erase(b);
      break;
    }
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
    dequeueLocked(w, r, key);
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
