// MetricsSource over the router's /metrics: each next() scrapes it and
// measures the interval since the previous good scrape (load_sampler.h).
// The router aggregates its workers' load (it polls their Stats), so one
// scrape covers the cluster. A failed scrape yields no sample; the next
// good one measures from the last good one, unless that is older than
// max_age (stale: it becomes the new baseline and yields no sample).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "planner/load_sampler.h"
#include "planner/metrics_source.h"
#include "common/prometheus_text.h"

namespace tandem::planner {

struct RouterMetricsSourceOptions {
  std::string metrics_url;  // http://HOST:PORT/metrics of the router
  SloBounds slo;
  std::chrono::milliseconds timeout{3000};
  // a baseline older than this is not measured from (seconds).
  double max_age_s = 60;
};

class RouterMetricsSource : public MetricsSource {
 public:
  explicit RouterMetricsSource(RouterMetricsSourceOptions options) : options_(std::move(options)) {}

  // MetricsSource
  absl::StatusOr<LoadSample> next(double now_s) override;

 private:
  struct Baseline {
    MetricsSnapshot metrics;
    double time_s = 0;
  };
  const RouterMetricsSourceOptions options_;
  std::optional<Baseline> baseline_;
};

}  // namespace tandem::planner
