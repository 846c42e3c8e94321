#include "bench/loadgen/arrival.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace tandem::bench {
namespace {

class GammaArrivals : public ArrivalProcess {
 public:
  GammaArrivals(double rate, double shape, uint64_t seed)
      : rate_(rate), shape_(shape), rng_(seed), gap_(shape, 1.0 / (rate * shape)) {}

  // ArrivalProcess
  std::optional<double> next(const BenchRequest&) override {
    // the first request goes at once, as in vLLM's benchmark.
    if (started_) t_ += gap_(rng_);
    started_ = true;
    return t_;
  }
  std::string describe() const override {
    if (shape_ == 1.0) return absl::StrFormat("poisson(rate=%g/s)", rate_);
    return absl::StrFormat("gamma(rate=%g/s, burstiness=%g)", rate_, shape_);
  }

 private:
  double rate_, shape_;
  std::mt19937_64 rng_;
  std::gamma_distribution<double> gap_;
  double t_ = 0;
  bool started_ = false;
};

class TraceArrivals : public ArrivalProcess {
 public:
  explicit TraceArrivals(double speedup) : speedup_(speedup) {}

  // ArrivalProcess
  std::optional<double> next(const BenchRequest& req) override {
    if (req.timestamp_s) t_ = std::max(t_, *req.timestamp_s / speedup_);
    return t_;
  }
  std::string describe() const override { return absl::StrFormat("trace(speedup=%g)", speedup_); }

 private:
  double speedup_;
  double t_ = 0;
};

class ClosedLoop : public ArrivalProcess {
 public:
  // ArrivalProcess
  std::optional<double> next(const BenchRequest&) override { return std::nullopt; }
  std::string describe() const override { return "closed-loop"; }
};

}  // namespace

ArrivalProcessPtr poissonArrivals(double rate, uint64_t seed) {
  return std::make_unique<GammaArrivals>(rate, 1.0, seed);
}
ArrivalProcessPtr gammaArrivals(double rate, double burstiness, uint64_t seed) {
  return std::make_unique<GammaArrivals>(rate, burstiness, seed);
}
ArrivalProcessPtr traceArrivals(double speedup) { return std::make_unique<TraceArrivals>(speedup); }
ArrivalProcessPtr closedLoopArrivals() { return std::make_unique<ClosedLoop>(); }

}  // namespace tandem::bench
