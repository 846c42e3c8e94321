// When requests are sent. Open-loop processes give each request a send
// time (seconds after the run starts): Poisson at a rate, bursty gamma
// arrivals at the same mean rate, or the trace's own timestamps sped up.
// Closed loop (--concurrency) has no times: the runner keeps C requests in
// flight and sends the next as one finishes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "absl/status/statusor.h"
#include "bench/loadgen/bench_request.h"

namespace tandem::bench {

class ArrivalProcess {
 public:
  virtual ~ArrivalProcess() = default;
  // the send time of `req` in seconds from the start, non-decreasing over
  // calls; nullopt means "as soon as a concurrency slot is free".
  virtual std::optional<double> next(const BenchRequest& req) = 0;
  // "poisson(rate=4)", for the result file and the summary.
  virtual std::string describe() const = 0;
};
using ArrivalProcessPtr = std::unique_ptr<ArrivalProcess>;

// exponential gaps with mean 1/rate.
ArrivalProcessPtr poissonArrivals(double rate, uint64_t seed);
// gamma-distributed gaps with mean 1/rate and shape `burstiness`: 1 is
// Poisson, < 1 burstier, > 1 more regular (as vLLM's --burstiness).
ArrivalProcessPtr gammaArrivals(double rate, double burstiness, uint64_t seed);
// the request's trace timestamp divided by `speedup`; requests without one
// follow the previous request at once.
ArrivalProcessPtr traceArrivals(double speedup);
// no times: closed loop.
ArrivalProcessPtr closedLoopArrivals();

}  // namespace tandem::bench
