// Bursty traces the planner simulator generates from a seed, to test the
// planner on traffic shapes it was not tuned on (`--trace synthetic:KIND`,
// trace_formats.h). Arrivals are a Poisson process whose rate follows the
// kind's shape (drawn by thinning), except `gamma`:
//   on-off       ON periods at peak x rate and OFF periods at low x rate,
//                their lengths exponential (means on_s, off_s);
//   flash-crowd  rate, and every every_s on average (exponential gaps, the
//                first within the first every_s) a crowd: peak x rate
//                reached within ramp_s (linear), held hold_s, back to rate
//                over 60 s;
//   diurnal      rate x (1 + depth x sin(2 pi t / period_s)): a day
//                compressed into period_s;
//   gamma        a renewal process at rate whose gaps are Gamma with a
//                squared coefficient of variation scv (BurstGPT's model of
//                its bursty arrivals: shape 1 / scv < 1).
// Prompts and outputs are lognormal (median, sigma) and capped; no two
// prompts share a block.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "bench/router_sim/sim_trace.h"

namespace tandem::bench {

struct SyntheticTraceOptions {
  std::string kind;      // on-off | flash-crowd | diurnal | gamma
  double rate = 40;      // requests/s (the base)
  double duration_s = 3600;
  uint64_t seed = 0;
  double peak = 5;       // on-off, flash-crowd: the burst's multiple of rate
  double low = 0.2;      // on-off: OFF's multiple of rate
  double on_s = 60, off_s = 120;
  double ramp_s = 10, hold_s = 180, every_s = 900;
  double period_s = 1800, depth = 0.8;
  double scv = 4;
  double prompt_median = 1024, prompt_sigma = 1, prompt_max = 8192;
  double output_median = 128, output_sigma = 1, output_max = 2048;
};

// "KIND" or "KIND:key=value,key=value" (the fields above by name: rate,
// duration_s, peak, ...). InvalidArgument naming an unknown kind or key or
// a value out of range.
absl::StatusOr<SyntheticTraceOptions> parseSyntheticSpec(const std::string& spec);

// the trace, named "synthetic:KIND (seed N)"; InvalidArgument for an
// unknown kind.
absl::StatusOr<SimTrace> syntheticTrace(const SyntheticTraceOptions& options, int block_size);

}  // namespace tandem::bench
