// The one parser of the Prometheus text exposition format (version 0.0.4),
// as much of it as tandem reads from a /metrics body (its own, or another
// server's for `tandem bench --server-metrics`): samples with labels and
// values, comments skipped. A snapshot answers sums over the series of a
// name (optionally those with some labels) and a histogram's cumulative
// buckets. The planner's load sampler and the bench's server-side deltas
// both read it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem {

using MetricLabels = std::map<std::string, std::string>;

struct MetricSample {
  std::string name;
  MetricLabels labels;
  double value = 0;

  // `name{a="x",b="y"}` with the labels in order and escaped as written on
  // the wire; `name` alone without labels.
  std::string series() const;
};

// one histogram (its series with the same labels but `le`): cumulative
// counts per upper bound, ascending, the last one +Inf.
struct HistogramBuckets {
  std::vector<double> upper_bounds;
  std::vector<double> cumulative;
  double sum = 0;
  double count = 0;
};

class MetricsSnapshot {
 public:
  // parses a whole /metrics body. InvalidArgument (naming the line) for a
  // line that is not a comment, blank or `name{labels} value [timestamp]`,
  // or whose metric or label names are not the format's
  // ([a-zA-Z_:][a-zA-Z0-9_:]*, labels without ':').
  static absl::StatusOr<MetricsSnapshot> parse(absl::string_view text);

  const std::vector<MetricSample>& samples() const { return samples_; }
  // true when a series named `name` is present.
  bool has(absl::string_view name) const;
  // the sum of the values of every series named `name` whose labels
  // include all of `match` (0 when none).
  double sum(absl::string_view name, const MetricLabels& match = {}) const;
  // the histogram `name` (its _bucket, _sum and _count series) summed over
  // the series whose labels include `match`; empty buckets when absent.
  HistogramBuckets histogram(absl::string_view name, const MetricLabels& match = {}) const;

 private:
  std::vector<MetricSample> samples_;
};

}  // namespace tandem
