// `tandem router simulate`: replays a trace through the router's real
// routing code (router/cluster RoutePlanner with its policies, KvIndex and
// WorkerLoadModel, not a copy) against simulated workers (sim_worker.h) in
// virtual time, once per policy (policies in parallel), and reports per policy the cache hit rate
// (prompt tokens served from cache / all prompt tokens), TTFT p50/p99, end-
// to-end p99, imbalance (max / mean worker busy time) and requests shed,
// next to the oracle hit rate (one shared infinite cache). Workers report
// Stats every stats_interval_s as the pool polls them; their KV events reach
// the index at once.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/router_sim/sim_trace.h"
#include "bench/router_sim/sim_worker.h"
#include "nlohmann/json.hpp"

namespace tandem::bench {

struct RouterSimOptions {
  int workers = 8;
  // per worker, a fraction of the trace's distinct blocks, unless
  // capacity_blocks > 0.
  double kv_capacity_fraction = 0.33;
  int64_t capacity_blocks = 0;
  std::vector<std::string> policies = {"kv", "dynamo", "least_loaded", "round_robin", "random",
                                       "power_of_two"};
  double speedup = 1;  // arrivals come this many times faster
  double prefill_tokens_per_s = 16000;
  double decode_ms_per_step = 20;
  double stats_interval_s = 0.25;
  double ttft_slo_ms = 0;  // 0 = no shedding
  uint64_t seed = 0;
  // policies simulated at once (each on its own thread, index and workers;
  // the results do not depend on it); 0 = one per core.
  int jobs = 0;
};

struct PolicyResult {
  std::string policy;
  double hit_rate = 0;
  double ttft_p50_ms = 0;
  double ttft_p99_ms = 0;
  double e2e_p99_ms = 0;
  double imbalance = 0;
  int64_t rejected = 0;
  double wall_s = 0;  // how long the simulation took
};

struct RouterSimResult {
  std::string trace;
  int64_t requests = 0;
  double oracle_hit_rate = 0;
  int64_t capacity_blocks = 0;
  std::vector<PolicyResult> policies;

  // {"trace", "requests", "oracle_hit_rate", "policies": {name: {...}}}
  nlohmann::json toJson() const;
  // bars of hit rate and TTFT p99 per policy.
  std::string toSvg() const;
};

// the hit rate of one infinite cache shared by all, in arrival order.
double oracleHitRate(const SimTrace& trace, int block_size);

absl::StatusOr<RouterSimResult> simulateRouter(const SimTrace& trace, int block_size,
                                               const RouterSimOptions& options);

}  // namespace tandem::bench
