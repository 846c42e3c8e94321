// The simulated worker of both simulators (router and planner), in virtual
// time (no sleeping): a prefix cache of the prompts it has held (LRU over
// its KV capacity, announced to the router's KvIndex as a real worker does:
// BlockStored when a prefill completes or a prompt's KV arrives,
// BlockRemoved on eviction, numbered from 1), a chunked-prefill queue of
// the prompts it prefills itself, and decode steps over a batch. What a
// step costs and what limits the batch is its SimWorkerModel: the router
// simulator's linear one (linearModel) or a measured profile's (the planner
// simulator's profileModel). Each step prefills up to chunk_tokens of the
// queue and decodes one token of every running request; with nothing to
// prefill, runs of identical steps are taken at once (up to max_run_steps,
// and the next finish), and an arrival splits such a run at the step in
// progress.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "bench/router_sim/sim_prefix_cache.h"
#include "bench/router_sim/sim_step_run.h"
#include "bench/router_sim/sim_trace.h"
#include "router/cluster/kv_index.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::bench {

struct SimWorkerModel {
  int block_size = 16;
  // its KV in tokens: the prefix cache's size (in whole blocks), the
  // reservations' bound, kvUtilization's denominator
  int64_t kv_capacity_tokens = int64_t{16} << 20;
  int chunk_tokens = 2048;            // prefill tokens a step
  // a step's chunk spans several queued prompts (true), or takes from the
  // first one only
  bool pack_prefills = true;
  int max_batch = std::numeric_limits<int>::max();  // requests decoding at once
  // a request joins the batch once its final length fits in the KV the
  // running ones have not reserved (a lone request always joins), and the
  // worker reports its reservations as its active blocks; without, it
  // reports the blocks of its running requests' prompts
  bool reserve_kv = false;
  int64_t max_run_steps = std::numeric_limits<int64_t>::max();
  // seconds of one decode step of `batch` requests of mean context `context`
  std::function<double(double batch, double context)> decode_step_s;
  // seconds to prefill a chunk of `tokens` of a prompt of `prompt_tokens`
  // (a chunk spanning prompts: at its first one's length)
  std::function<double(double tokens, double prompt_tokens)> prefill_s;
};

// the router simulator's worker: decode steps of decode_s_per_step x (1 +
// batch / batch_knee), prefill at prefill_tokens_per_s, no batch limit.
struct SimWorkerConfig {
  int64_t capacity_blocks = 1 << 20;
  int block_size = 16;
  double prefill_tokens_per_s = 8000;
  double decode_s_per_step = 0.02;
  double batch_knee = 32;
  int chunk_tokens = 2048;
};
SimWorkerModel linearModel(const SimWorkerConfig& config);

class SimWorker {
 public:
  static constexpr double kNever = SimStepRun::kNever;

  // `index` (the router's) receives its KV events and capacity; it must
  // outlive the worker.
  SimWorker(std::string address, SimWorkerModel model, router::cluster::KvIndex* index);

  const std::string& address() const { return address_; }
  // the prompt tokens the cache holds (its leading blocks), kept fresh.
  int64_t cachedTokens(const SimRequest& request);
  // request `id` arrives at `now` (the worker has advanced to now): it
  // prefills `new_tokens` of the prompt itself, then decodes. `request`
  // must outlive the worker.
  void addLocal(int id, const SimRequest* request, int64_t new_tokens, double now);
  // request `id`'s first token came from elsewhere (a prefill worker) at
  // `now`, with the prompt's KV: it decodes the rest.
  void addRemote(int id, const SimRequest* request, double now);
  // when the step (or run) in progress ends (+inf when idle).
  double nextEventTime() const { return step_.end(); }
  // completes every step that ends at or before `t`.
  void advanceTo(double t, std::vector<SimOutcome>& out);
  bool idle() const { return !step_.active && waiting_.empty() && local_.empty(); }
  // KV in use / capacity (0..1), and requests waiting to join the batch.
  double kvUtilization() const;
  int waiting() const { return static_cast<int>(waiting_.size() + local_.size()); }
  int running() const { return static_cast<int>(running_.size()); }
  // as a Stats answer would report now.
  tandem::v1::WorkerStats stats() const;
  // seconds spent in steps so far.
  double busySeconds() const { return busy_s_; }

 private:
  // decoding: `remaining` tokens to decode.
  struct Running : SimSequence {
    int64_t context;   // tokens in its KV now
    int64_t reserved;  // its final length
    int64_t blocks;    // its prompt's blocks
  };

  void remember(int id, const SimRequest* request);
  void planStep(double now);
  void completeStep(std::vector<SimOutcome>& out);
  void splitRun(double now);

  const std::string address_;
  const SimWorkerModel model_;
  const int64_t capacity_tokens_;
  std::vector<const SimRequest*> requests_;  // by id, those seen
  std::deque<SimSequence> local_;            // to prefill here
  int64_t local_tokens_ = 0;                 // their remaining tokens
  std::deque<int> waiting_;                  // to join the batch
  std::vector<Running> running_;
  int64_t used_tokens_ = 0, reserved_tokens_ = 0, running_blocks_ = 0;
  SimStepRun step_;
  std::vector<std::pair<int, int64_t>> chunk_;  // the step's (id, tokens) from local_'s front
  double busy_s_ = 0;
  SimPrefixCache cache_;
};

}  // namespace tandem::bench
