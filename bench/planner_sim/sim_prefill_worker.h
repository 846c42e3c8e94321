// A simulated prefill worker for the planner simulator, in virtual time: it
// prefills the prompts routed to it one after another in arrival order
// (the uncached part of each, at the profile's throughput for the prompt's
// length) and hands each first token to its decode worker. No prefix cache
// of its own: the router sends it only what the decode worker lacks.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "planner/profile.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::bench {

class SimPrefillWorker {
 public:
  // `profile` must outlive the worker.
  SimPrefillWorker(std::string address, const planner::WorkerProfile* profile);

  const std::string& address() const { return address_; }
  // request `id` arrives at `now` with `new_tokens` of a `prompt_tokens`
  // prompt to prefill.
  void enqueue(int id, int64_t new_tokens, int64_t prompt_tokens, double now);
  // when the prefill in progress ends (+inf when idle).
  double nextEventTime() const;
  // completes the prefills that end at or before `t`: (request id, time) each.
  void advanceTo(double t, std::vector<std::pair<int, double>>& done);
  bool idle() const { return queue_.empty(); }
  int64_t queuedTokens() const { return queued_tokens_; }
  // as a Stats answer would report now.
  tandem::v1::WorkerStats stats() const;

 private:
  struct Job {
    int id;
    int64_t new_tokens;
    double seconds;
  };

  const std::string address_;
  const planner::WorkerProfile* profile_;
  std::deque<Job> queue_;  // front: in progress since start_
  double start_ = 0;
  int64_t queued_tokens_ = 0;
};

}  // namespace tandem::bench
