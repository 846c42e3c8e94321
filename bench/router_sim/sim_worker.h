// One simulated worker for the router simulator, in virtual time (no
// sleeping): a KV cache of capacity_blocks with LRU eviction that emits KV
// events into the router's KvIndex as a real worker does (BlockStored when
// a prefill completes, BlockRemoved on eviction, numbered from 1), a
// chunked-prefill queue served at prefill_tokens_per_s, and decode steps
// whose time grows with the batch: decode_s_per_step x (1 + batch /
// batch_knee). Each step prefills up to chunk_tokens of the queue and
// decodes one token of every running request; with nothing to prefill,
// runs of identical steps are taken at once up to the next finish, and an
// arrival splits such a run at the step in progress.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "bench/router_sim/sim_prefix_cache.h"
#include "bench/router_sim/sim_step_run.h"
#include "bench/router_sim/sim_trace.h"
#include "router/cluster/kv_index.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::bench {

struct SimWorkerConfig {
  int64_t capacity_blocks = 1 << 20;
  int block_size = 16;
  double prefill_tokens_per_s = 8000;
  double decode_s_per_step = 0.02;
  double batch_knee = 32;
  int chunk_tokens = 2048;
};

class SimWorker {
 public:
  // `index` (the router's) receives its KV events; it must outlive the worker.
  SimWorker(std::string address, SimWorkerConfig config, router::cluster::KvIndex* index);

  const std::string& address() const { return address_; }
  // request `id` arrives at `now` (the worker has advanced to now); returns
  // the prompt tokens its cache held. `request` must outlive the worker.
  int64_t enqueue(int id, const SimRequest& request, double now);
  // when the step in progress ends (+inf when idle).
  double nextEventTime() const { return step_.end(); }
  // completes every step that ends at or before `t`.
  void advanceTo(double t, std::vector<SimOutcome>& out);
  // as a Stats answer would report now.
  tandem::v1::WorkerStats stats() const;
  // seconds spent in steps so far.
  double busySeconds() const { return busy_s_; }

  static constexpr double kNever = SimStepRun::kNever;

 private:
  void planStep(double now);
  void completeStep(std::vector<SimOutcome>& out);
  void prefillDone(int id, double now, std::vector<SimOutcome>& out);

  const std::string address_;
  const SimWorkerConfig config_;
  std::vector<const SimRequest*> requests_;  // by id, those seen
  std::deque<SimSequence> queue_;  // to prefill
  int64_t queued_tokens_ = 0;
  std::vector<SimSequence> running_;  // decoding
  int64_t running_blocks_ = 0;
  SimStepRun step_;
  std::vector<std::pair<int, int64_t>> chunk_;  // (queue position's id, tokens)
  double busy_s_ = 0;
  SimPrefixCache cache_;
};

}  // namespace tandem::bench
