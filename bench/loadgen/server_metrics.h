// The server's own view of a run: its Prometheus /metrics scraped before
// and after, and what changed. Counters' differences (requests, tokens,
// cache hits) say what the server did during the run, to set beside what
// the client measured.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tandem::bench {

// series (name with its labels, as written) -> value, from the Prometheus
// text exposition format. Comments, blank lines and unparsable samples are
// skipped; a trailing timestamp is ignored.
std::map<std::string, double> parsePrometheusText(const std::string& text);

// {"before": {...}, "after": {...}, "delta": {...}}; delta holds every
// series present in both whose value changed.
nlohmann::json metricsDelta(const std::map<std::string, double>& before,
                            const std::map<std::string, double>& after);

}  // namespace tandem::bench
