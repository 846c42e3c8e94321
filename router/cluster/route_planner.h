// Where one request goes: the decode worker D (healthy, decode or both,
// least loaded: running + waiting, then most free blocks, ties at random)
// and whether D prefills the prompt itself or asks a prefill worker P
// (conditional disaggregation): remotely only when the prompt tokens D
// does not hold in its cache exceed max_local_prefill_tokens and a healthy
// prefill worker has fewer than max_prefill_queue_tokens queued (the least
// loaded one is taken).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "router/cluster/kv_index.h"
#include "router/cluster/worker_pool.h"

namespace tandem::router::cluster {

struct RoutePlannerOptions {
  // prompts with more uncached tokens on D than this go to a prefill worker;
  // 64 measured (bench/RESULTS.md, "Remote prefill threshold").
  int max_local_prefill_tokens = 64;
  int64_t max_prefill_queue_tokens = 16384;
};

struct RouteDecision {
  std::string decode_address;
  std::string prefill_address;  // "" = D prefills locally
  int block_size = 0;
  int cached_blocks = 0;        // leading prompt blocks D holds (KV index)
  int uncached_tokens = 0;
};

class RoutePlanner {
 public:
  // `index` may be null (nothing is cached); it must outlive the planner.
  RoutePlanner(RoutePlannerOptions options, const KvIndex* index);

  // picks D and P for `prompt` + up to `max_tokens` among `workers`,
  // skipping the decode workers in `exclude` (those that just failed this
  // request) unless no other is healthy. `in_flight` (requests this router
  // has running per address) counts as load when above the worker's last
  // reported one: stats lag the router's own choices. Unavailable when no
  // healthy decode-capable worker can take the request.
  absl::StatusOr<RouteDecision> plan(std::span<const int32_t> prompt, int max_tokens,
                                     const std::vector<WorkerState>& workers,
                                     const std::map<std::string, int>& in_flight,
                                     const std::vector<std::string>& exclude);

  const RoutePlannerOptions& options() const { return options_; }

 private:
  const WorkerState* pickDecode(int64_t final_len, const std::vector<WorkerState>& workers,
                                const std::map<std::string, int>& in_flight,
                                const std::vector<std::string>& exclude, bool honour_exclude);
  const WorkerState* pickPrefill(const std::vector<WorkerState>& workers);

  const RoutePlannerOptions options_;
  const KvIndex* index_;
  std::mutex rng_mu_;
  std::mt19937_64 rng_;  // guarded by rng_mu_
};

// true when `worker` can hold a request of `final_len` tokens (prompt +
// max_tokens, capped at the context) in its KV cache alone.
bool fitsInCache(const WorkerState& worker, int64_t final_len);

}  // namespace tandem::router::cluster
