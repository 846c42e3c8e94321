#include "bench/loadgen/server_metrics.h"

#include <cmath>

#include "common/prometheus_text.h"

namespace tandem::bench {

absl::StatusOr<std::map<std::string, double>> seriesValues(absl::string_view text) {
  absl::StatusOr<MetricsSnapshot> snapshot = MetricsSnapshot::parse(text);
  if (!snapshot.ok()) return snapshot.status();
  std::map<std::string, double> out;
  for (const MetricSample& sample : snapshot->samples()) out[sample.series()] = sample.value;
  return out;
}

nlohmann::json metricsDelta(const std::map<std::string, double>& before,
                            const std::map<std::string, double>& after) {
  nlohmann::json delta = nlohmann::json::object();
  for (const auto& [k, v] : after) {
    auto it = before.find(k);
    if (it != before.end() && std::isfinite(v) && std::isfinite(it->second) && v != it->second) {
      delta[k] = v - it->second;
    }
  }
  auto finite = [](const std::map<std::string, double>& m) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [k, v] : m) if (std::isfinite(v)) j[k] = v;
    return j;
  };
  return {{"before", finite(before)}, {"after", finite(after)}, {"delta", delta}};
}

}  // namespace tandem::bench
