// `tandem planner simulate`: a cluster of prefill and decode workers
// (sim_prefill_worker.h, sim_profile_model.h: the profile's timings) behind
// the router's real routing code (router/cluster RoutePlanner, KvIndex,
// WorkerLoadModel) in virtual time, with the planner in the loop: every
// interval the scaling policy (planner/policies.h) sees the interval's load
// (as the live planner would scrape it) and the predictor's forecast, and
// decides the workers per role. A worker added is paid for from the decision
// and routable after the cold start; one removed leaves routing at once and
// stops when it has finished its requests (drain: nothing is lost). Each
// policy runs on its own cluster (in parallel), and reports the share of
// requests within the TTFT SLO and within the ITL SLO (a request's mean
// inter-token latency, its wait to join a batch included), the GPU-hours
// (one GPU a worker, from its decision to its stop), scale events and the
// most workers, with a timeline per interval. Beside them runs the bound,
// `foresight` (foresight_policy.h): an autoscaler that knows the future and
// still pays the cold start; each policy's savings against `static` are
// reported as a fraction of the bound's (`fraction_of_possible_savings`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/router_sim/sim_trace.h"
#include "nlohmann/json.hpp"
#include "planner/planner_types.h"
#include "planner/profile.h"

namespace tandem::bench {

struct PlannerSimOptions {
  std::vector<std::string> policies = {"sla", "load", "static"};
  std::string predictor = "holt-winters";
  double interval_s = 10;
  double cold_start_s = 30;
  double ttft_slo_ms = 500;
  double itl_slo_ms = 50;
  int block_size = 64;  // the KV index's and the caches' block
  planner::ScalingBounds bounds{.min = {1, 1}, .max = {512, 512}, .max_total = 1024};
  double stats_interval_s = 0.25;  // how often the router sees workers' Stats
  uint64_t seed = 0;
  int jobs = 0;           // policies at once; 0 = one per core
  bool progress = false;  // a line on stderr per tenth of the trace
  // `static`'s counts; {0, 0}: peakSize's (the sizing model at the trace's
  // busiest interval). bench/planner_sim.sh searches the smallest that
  // meets the SLOs with it.
  planner::RoleCounts static_counts;
  // the router learns each prefill worker's throughput from its first
  // tokens (its default); false keeps the profile's rate at 2k tokens for
  // all (to show what the learned rates cost: they depend on the prompt
  // lengths a worker last served, and mislead long prompts' routing).
  bool router_learns_rates = true;
  // the router has a decode worker prefill a prompt itself while the prefill
  // worker chosen predicts a first token past the TTFT SLO and D predicts
  // sooner (RoutePlannerOptions::spill_prefill_over_s); false: every
  // uncached prompt goes to a prefill worker while one is routable.
  bool decode_spill = true;
  // sla's burst envelope (planner::PolicyConfig::burst_quantile, burst_window_s).
  double burst_quantile = 1;
  double burst_window_s = 1200;
  // run the perfect-foresight bound beside the policies, calibrated (its
  // headroom searched for the SLO targets: foresight_policy.h) or not.
  bool foresight = true;
  bool foresight_calibrate = true;
  // the share of requests within each SLO the bound is calibrated for (or
  // static's own, where static reaches less: some traces' prompts exceed
  // the TTFT SLO by their prefill alone).
  double target_attainment = 0.99;
  // keep each decision as the live planner logs it
  // (PlannerPolicyResult::decisions; `--decisions FILE`).
  bool record_decisions = false;
};

struct IntervalPoint {
  double time_s = 0;        // the interval's end
  double offered_rate = 0;  // arrivals per second in it
  int prefill = 0;          // workers paid for at its end (starting, ready, draining)
  int decode = 0;
  double ttft_attainment = 1;  // of the first tokens in it
  double itl_attainment = 1;   // of the requests that finished in it
};

// the requests of one prompt-length range and how many missed: TTFT misses
// split into those whose own prefill (the uncached tokens as routed, at the
// profile) exceeds the TTFT SLO, which no number of workers can meet, and
// those that waited: for a prefill worker, or (prefilled by their decode
// worker, the prompt almost all cached there) to join its batch.
struct MissBucket {
  int64_t max_prompt_tokens = 0;  // the range's upper end (inclusive)
  int64_t requests = 0;
  int64_t ttft_misses = 0;
  int64_t ttft_misses_service = 0;  // own prefill alone over the SLO
  int64_t ttft_misses_local = 0;    // the rest, of those prefilled by their decode worker
  int64_t itl_misses = 0;
};

struct PlannerPolicyResult {
  std::string policy;
  double ttft_attainment = 0;
  double itl_attainment = 0;
  double gpu_hours = 0;
  int scale_events = 0;  // role count changes
  int max_workers = 0;
  int max_prefill = 0, max_decode = 0;
  int64_t finished = 0;    // requests that ended (all of them: none is lost)
  int64_t slo_misses = 0;  // requests that missed either SLO
  double ttft_p99_ms = 0, itl_p99_ms = 0;
  double sim_wall_s = 0;
  // (static - this) / (static - foresight) GPU-hours: the share of what a
  // perfect autoscaler saves against static that this policy saves; none
  // without both, or when the bound saves nothing.
  std::optional<double> fraction_of_possible_savings;
  std::vector<IntervalPoint> timeline;
  std::vector<MissBucket> by_prompt;  // prompt ranges up to 2k, 8k, 32k, 64k, 96k, longer
  // with options.record_decisions: one JSON line per interval, the live
  // planner's (planner/decision_json.h), in time order.
  std::vector<std::string> decisions;
};

struct PlannerSimResult {
  std::string trace;
  int64_t requests = 0;
  double duration_s = 0;  // the last arrival
  // what `static` ran with: options.static_counts when given, else the
  // sizing model at the trace's busiest interval (static_model_counts).
  planner::RoleCounts static_counts;
  planner::RoleCounts static_model_counts;  // peakSize
  // what the bound's counts were multiplied by to meet the SLO targets.
  double foresight_headroom_prefill = 1, foresight_headroom_decode = 1;
  PlannerSimOptions options;
  std::vector<PlannerPolicyResult> policies;  // options.policies, then "foresight"

  // {"trace", "requests", ..., "policies": {name: {"ttft_attainment", "itl_attainment",
  //  "gpu_hours", "scale_events", "max_workers", ..., "timeline": {...}}}}
  nlohmann::json toJson() const;
  // offered load, workers per role and attainment over time, per policy.
  std::string toSvg() const;
};

// the counts `static` runs with by default: the most the bound's sizing
// (SlaPolicy::sizeForInterval, no corrections) asks for over the trace's intervals, each prompt's
// cached part taken as what one shared cache of everything seen before
// would hold (per-worker caches hold less: the model's peak is a lower
// bound of what a static cluster needs).
planner::RoleCounts peakSize(const SimTrace& trace, const planner::WorkerProfile& profile,
                             const PlannerSimOptions& options);

absl::StatusOr<PlannerSimResult> simulatePlanner(const SimTrace& trace, const planner::WorkerProfile& profile,
                                                 const PlannerSimOptions& options);

}  // namespace tandem::bench
