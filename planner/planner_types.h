// What the planner observes and decides, shared by the live planner
// (`tandem planner run`) and the simulator (`tandem planner simulate`):
// one sample of load per interval, worker counts per role, bounds.
#pragma once

#include <array>
#include <string>

#include "common/prompt_mix_series.h"

namespace tandem::planner {

enum class Role { kPrefill, kDecode };

// "prefill" / "decode": the label of metrics and logs.
inline const char* roleName(Role role) { return role == Role::kPrefill ? "prefill" : "decode"; }

struct RoleCounts {
  int prefill = 0;
  int decode = 0;

  int& operator[](Role r) { return r == Role::kPrefill ? prefill : decode; }
  int operator[](Role r) const { return r == Role::kPrefill ? prefill : decode; }
  int total() const { return prefill + decode; }
  bool operator==(const RoleCounts&) const = default;
};

// Limits a decision must respect (`--min-prefill ... --max-total`).
struct ScalingBounds {
  RoleCounts min{0, 1};
  RoleCounts max{8, 8};
  int max_total = 16;
};

// The arrivals' prompt lengths by range: per range (upper ends kEdges, the
// last unbounded; the ranges the router exports, common/prompt_mix_series.h)
// the requests and the sums of their prompt, uncached and
// output tokens and of prompt x output (the KV a request holds, weighted by
// how long it decodes). What the `sla` policy sizes prefill with when the
// source has it (the M/G/N model per range, queue_model.h): the means alone
// hide the long prompts that miss the TTFT SLO.
struct PromptMix {
  static constexpr std::array<double, 12> kEdges = prompt_mix::kEdges;
  static constexpr size_t kRanges = prompt_mix::kRanges;
  std::array<double, kRanges> requests{}, prompt_tokens{}, uncached_tokens{}, output_tokens{}, prompt_x_output{};

  void add(double prompt, double uncached, double output);
  double total() const;
  bool empty() const { return total() <= 0; }
  // this = this x decay + other (a window that forgets at `decay` an interval).
  void blend(const PromptMix& other, double decay);
};

// One interval of load as the router and workers saw it (or as a predictor
// expects it). Rates are per second of the interval; latencies are what the
// requests finished in the interval met. A field the source cannot measure
// stays 0 (the policies treat 0 latencies as "no data", not as "fast").
struct LoadSample {
  double time_s = 0;             // end of the interval, seconds since the planner started
  double interval_s = 0;         // its length
  double request_rate = 0;       // requests arriving per second
  double mean_input_tokens = 0;  // ISL of those requests
  double mean_output_tokens = 0; // OSL of those requests
  double cached_fraction = 0;    // share of input tokens served from a prefix cache (0..1)
  // latencies of the requests that finished in the interval
  double ttft_p50_ms = 0, ttft_p95_ms = 0;
  double itl_p50_ms = 0, itl_p95_ms = 0;
  // their means (a histogram's sum / count): what the sla policy's
  // corrections compare with its model, since means add up where quantiles
  // of heavy-tailed prompt lengths do not.
  double ttft_mean_ms = 0, itl_mean_ms = 0;
  double ttft_slo_attainment = 1;  // share of them that met the TTFT SLO
  double itl_slo_attainment = 1;   // ... the ITL SLO
  // saturation of the workers now (llm-d's signals), averaged per role
  double prefill_queue_tokens = 0;  // prompt tokens waiting for prefill, per prefill worker
  double decode_kv_utilization = 0; // used / total KV blocks on decode workers (0..1)
  double decode_queue_requests = 0; // requests waiting on decode workers, per worker
  RoleCounts ready;                 // workers routable now
  PromptMix mix;                    // the arrivals' prompt lengths (empty: not measured)
  // from the arrivals' times (planner/arrival_burst.h), 0 where not
  // measured (a source without arrival times, fewer than 3 arrivals): the
  // rate of the busiest half of the interval, and the squared coefficient
  // of variation of the gaps between its arrivals (1: Poisson; more:
  // clumps within it).
  double peak_request_rate = 0;
  double arrival_scv = 0;
  // requests in decode (running or waiting on decode workers), averaged
  // over the interval; 0: not measured (the simulator measures it).
  double decode_requests = 0;
};

// What a policy decided for the next interval, with why (logged and exported).
struct ScalingDecision {
  RoleCounts desired;
  std::string reason;
};

}  // namespace tandem::planner
