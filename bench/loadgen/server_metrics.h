// The server's own view of a run: its Prometheus /metrics scraped before
// and after, and what changed. Counters' differences (requests, tokens,
// cache hits) say what the server did during the run, to set beside what
// the client measured.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace tandem::bench {

// series (name with its labels, MetricSample::series()) -> value, for every
// sample of a /metrics body as common/prometheus_text.h parses it;
// InvalidArgument naming the first malformed line.
absl::StatusOr<std::map<std::string, double>> seriesValues(absl::string_view text);

// {"before": {...}, "after": {...}, "delta": {...}}; delta holds every
// series present in both whose value changed.
nlohmann::json metricsDelta(const std::map<std::string, double>& before,
                            const std::map<std::string, double>& after);

}  // namespace tandem::bench
