// A simulated decode worker for the planner simulator, in virtual time. It
// holds a prefix cache of the prompts it has seen (LRU over the profile's KV
// capacity, announced to the router's KvIndex as a real worker does), runs
// decode steps whose time is the profile's ITL at its batch and mean context,
// and prefills short uncached prompts itself (chunks of chunk_tokens added
// to a step, as the engine's chunked prefill does). A request joins the
// batch at the next step once the batch has room (max_batch) and its final
// length fits in the KV capacity not reserved by the running ones; until
// then it waits (the wait shows in its ITL). Runs of identical steps are
// taken at once (up to max_run_steps, so the context stays current); an
// arrival splits a run at the step in progress.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "bench/router_sim/sim_prefix_cache.h"
#include "bench/router_sim/sim_step_run.h"
#include "bench/router_sim/sim_trace.h"
#include "planner/profile.h"
#include "router/cluster/kv_index.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::bench {

class SimDecodeWorker {
 public:
  static constexpr int kChunkTokens = 2048;
  static constexpr int kMaxRunSteps = 32;

  // `profile` and `index` must outlive the worker.
  SimDecodeWorker(std::string address, const planner::WorkerProfile* profile, int block_size,
                  router::cluster::KvIndex* index);

  const std::string& address() const { return address_; }
  // the prompt tokens the cache holds (its leading blocks), kept fresh.
  int64_t cachedTokens(const SimRequest& request);
  // the worker prefills `new_tokens` of the prompt itself, then decodes.
  // `request` must outlive the worker.
  void addLocal(int id, const SimRequest* request, int64_t new_tokens, double now);
  // a prefill worker produced the first token at `now` and sent the KV.
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

 private:
  // decoding: `remaining` tokens to decode.
  struct Running : SimSequence {
    int64_t context;    // tokens in its KV now
    int64_t reserved;   // its final length
  };

  void planStep(double now);
  void completeStep(std::vector<SimOutcome>& out);
  void splitRun(double now);

  const std::string address_;
  const planner::WorkerProfile* profile_;
  const int block_size_;
  const int64_t capacity_tokens_;
  std::vector<const SimRequest*> requests_;  // by id, those seen
  std::deque<SimSequence> local_;  // to prefill here
  std::deque<int> waiting_;
  std::vector<Running> running_;
  int64_t used_tokens_ = 0, reserved_tokens_ = 0;
  SimStepRun step_;
  int64_t chunk_ = 0;  // local prefill tokens in the step (of local_.front())
  SimPrefixCache cache_;
};

}  // namespace tandem::bench
