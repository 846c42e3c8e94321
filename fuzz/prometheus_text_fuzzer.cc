// A /metrics body as tandem reads it (common/prometheus_text.h): the
// planner from the router, `tandem bench --server-metrics` from any server
// it measures. Whatever the body, parse() answers a snapshot or an error
// naming the line; every sample renders back to a series that parses to
// the same name and labels; sums and histograms over it stay finite or NaN
// without faulting.
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "common/prometheus_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tandem::MetricsSnapshot> snapshot = tandem::MetricsSnapshot::parse(text);
  if (!snapshot.ok()) return 0;
  for (const tandem::MetricSample& sample : snapshot->samples()) {
    absl::StatusOr<tandem::MetricsSnapshot> again = tandem::MetricsSnapshot::parse(sample.series() + " 1\n");
    if (!again.ok() || again->samples().size() != 1 || again->samples()[0].name != sample.name ||
        again->samples()[0].labels != sample.labels) {
      __builtin_trap();
    }
    (void)snapshot->sum(sample.name, sample.labels);
    (void)snapshot->histogram(sample.name);
  }
  return 0;
}
