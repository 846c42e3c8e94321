#include "bench/planner_sim/sim_prefill_worker.h"

#include <algorithm>
#include <limits>

namespace tandem::bench {

SimPrefillWorker::SimPrefillWorker(std::string address, const planner::WorkerProfile* profile)
    : address_(std::move(address)), profile_(profile) {}

void SimPrefillWorker::enqueue(int id, int64_t new_tokens, int64_t prompt_tokens, double now) {
  if (queue_.empty()) start_ = now;
  const double seconds = profile_->prefillSeconds(static_cast<double>(new_tokens), static_cast<double>(prompt_tokens));
  queue_.push_back({id, new_tokens, seconds});
  queued_tokens_ += new_tokens;
}

double SimPrefillWorker::nextEventTime() const {
  return queue_.empty() ? std::numeric_limits<double>::infinity() : start_ + queue_.front().seconds;
}

void SimPrefillWorker::advanceTo(double t, std::vector<std::pair<int, double>>& done) {
  while (!queue_.empty() && nextEventTime() <= t) {
    const double end = nextEventTime();
    done.emplace_back(queue_.front().id, end);
    queued_tokens_ -= queue_.front().new_tokens;
    queue_.pop_front();
    start_ = end;
  }
}

tandem::v1::WorkerStats SimPrefillWorker::stats() const {
  tandem::v1::WorkerStats s;
  s.set_worker_id(address_);
  s.set_num_running(queue_.empty() ? 0 : 1);
  s.set_num_waiting(static_cast<int32_t>(std::max<size_t>(queue_.size(), 1) - 1));
  s.set_num_blocks(1 << 20);
  s.set_num_free_blocks(1 << 20);
  s.set_num_prefill_tokens_queued(queued_tokens_);
  return s;
}

}  // namespace tandem::bench
