// Where one request goes: the decode worker D, chosen among the routable (healthy, not draining)
// decode-capable ones whose cache can hold the request by the routing
// policy (routing_policy.h; default kv: the least predicted time to first
// token given what each worker holds of the prompt, per tier, in the KV
// index, and its predicted load), and whether D prefills the prompt itself
// or a prefill worker P does (conditional disaggregation): remotely only
// when the prompt tokens D does not hold exceed max_local_prefill_tokens
// and a healthy prefill worker has fewer than max_prefill_queue_tokens
// queued; P is chosen by the same policy (its own prefix cache counts, and
// the transfer of the blocks D lacks). While the prefill pool is short (the
// P chosen predicts its first token later than spill_prefill_over_s), D
// prefills the prompt itself when it predicts sooner: decode workers lend
// their compute to a burst until new prefill workers are up. With a TTFT SLO, a request no worker
// can start within it is refused (ResourceExhausted: the front ends answer
// 429 with Retry-After) rather than queued.
//
// Each decision counts at once in the planner's WorkerLoadModel (the
// caller reports the request's first token and end with the same key).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "router/cluster/kv_index.h"
#include "router/cluster/routing_policy.h"
#include "router/cluster/worker_load_model.h"
#include "router/cluster/worker_pool.h"

namespace tandem::router::cluster {

struct RoutePlannerOptions {
  // prompts with more uncached tokens on D than this go to a prefill worker;
  // 64 measured (bench/RESULTS.md, "Remote prefill threshold").
  int max_local_prefill_tokens = 64;
  int64_t max_prefill_queue_tokens = 16384;
  // seconds: a prompt whose prefill worker predicts its first token later
  // than this is prefilled by D when D predicts sooner (the TTFT SLO is the
  // natural value: beyond it P's head start is no use); 0 = never.
  double spill_prefill_over_s = 0;
  // routing_policy.h; an unknown name is refused by RoutePlanner::create.
  std::string policy = "kv";
  RoutingCosts costs;
  // refuse requests no worker can start within this (seconds); 0 = never.
  double ttft_slo_s = 0;
  WorkerLoadModelOptions load;
  // seeds the ties and samples; 0 = a random seed.
  uint64_t seed = 0;
};

struct RouteDecision {
  std::string decode_address;
  std::string prefill_address;  // "" = D prefills locally
  int block_size = 0;
  int cached_blocks = 0;        // leading prompt blocks D holds (KV index, any tier)
  int uncached_tokens = 0;      // prompt tokens D does not hold
  // prompt tokens the prefilling worker (P or D) holds, and its predicted TTFT.
  int64_t predicted_cached_tokens = 0;
  double predicted_ttft_s = 0;
  RouteOutcome outcome = RouteOutcome::kCold;
};

// one request to route: its tokens, or (the simulator) its hash chain.
struct RouteQuery {
  std::span<const int32_t> prompt;
  // used when `prompt` is empty: the prompt's block hashes at the workers'
  // block size, and its length.
  std::span<const kvcache::BlockHash> hashes;
  int64_t prompt_tokens = 0;
  int max_tokens = 0;
  // the load model's key for this attempt (its first token and end are
  // reported with it); 0 = not tracked.
  uint64_t key = 0;
  // seconds on the caller's clock (the load model's).
  double now_s = 0;
  // whether the TTFT SLO may refuse it: only a request not yet admitted (its
  // first attempt); one already accepted (a migration, a retry) must go on.
  bool may_shed = true;
  // the request scores its prompt (prompt_logprobs): D prefills it whole
  // and itself, never a prefill worker. Its logits are needed where it is
  // prefilled, and a cached block has none; carrying the scores back from P
  // would add a message as large as the prompt times the top-N to the
  // Prefill RPC and still transfer KV a scoring request (often max_tokens
  // 0: no decode at all) has no use for.
  bool scores_prompt = false;
};

class RoutePlanner {
 public:
  // `index` may be null (nothing is cached); it must outlive the planner.
  // An unknown policy name is InvalidArgument.
  static absl::StatusOr<std::unique_ptr<RoutePlanner>> create(RoutePlannerOptions options,
                                                              const KvIndex* index);
  // as create(); an unknown policy falls back to kv.
  RoutePlanner(RoutePlannerOptions options, const KvIndex* index);

  // picks D and P for `prompt` + up to `max_tokens` among `workers`,
  // skipping the decode workers in `exclude` (those that just failed this
  // request) unless no other is healthy. `in_flight` (requests this router
  // has running per address) counts as load when above the worker's last
  // reported one. Unavailable when no healthy decode-capable worker can take
  // the request; ResourceExhausted when none can meet the TTFT SLO (only
  // when `query.may_shed`).
  absl::StatusOr<RouteDecision> plan(std::span<const int32_t> prompt, int max_tokens,
                                     const std::vector<WorkerState>& workers,
                                     const std::map<std::string, int>& in_flight,
                                     const std::vector<std::string>& exclude);
  absl::StatusOr<RouteDecision> plan(const RouteQuery& query, const std::vector<WorkerState>& workers,
                                     const std::map<std::string, int>& in_flight,
                                     const std::vector<std::string>& exclude);

  // the request planned with `key` produced its first token / ended after
  // `output_tokens` (for its D and P).
  void firstToken(uint64_t key, double now_s);
  void finished(uint64_t key, int64_t output_tokens, double now_s);

  const RoutePlannerOptions& options() const { return options_; }
  std::string_view policyName() const { return policy_->name(); }
  WorkerLoadModel& loadModel() { return load_; }

 private:
  // fills the candidates among `workers`; false when none.
  bool decodeCandidates(const std::vector<WorkerState>& workers, int64_t prompt_tokens, int64_t final_len,
                        const std::map<std::string, int>& in_flight,
                        const std::vector<std::string>& exclude, bool honour_exclude,
                        double now_s, std::vector<RouteCandidate>& out) const;
  // its load, the prefill rate for a prompt of `prompt_tokens`.
  RouteCandidate candidate(const WorkerState& w, double now_s, int64_t prompt_tokens) const;
  TierMatch matchOf(const std::string& address) const;

  const RoutePlannerOptions options_;
  const KvIndex* index_;
  std::unique_ptr<RoutingPolicy> policy_;
  WorkerLoadModel load_;
  std::mutex mu_;  // one decision at a time: each sees the load of the last
  std::mt19937_64 rng_;  // guarded by mu_
  // the current plan's matches; guarded by mu_
  std::vector<std::pair<std::string, TierMatch>> matches_;
};

// true when `worker` can hold a request of `final_len` tokens (prompt +
// max_tokens, capped at the context) in its KV cache alone.
bool fitsInCache(const WorkerState& worker, int64_t final_len);

// the load model key of a request's prefill worker (its decode worker's is `key`).
inline uint64_t prefillKey(uint64_t key) { return key ^ (uint64_t{1} << 63); }

}  // namespace tandem::router::cluster
