#include "planner/router_metrics_source.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "planner/http_client.h"

namespace tandem::planner {

absl::StatusOr<LoadSample> RouterMetricsSource::next(double now_s) {
  absl::StatusOr<HttpReply> reply = httpCall({.url = options_.metrics_url, .timeout = options_.timeout});
  if (!reply.ok()) return reply.status();
  if (reply->status != 200) {
    return absl::UnavailableError(absl::StrCat("GET ", options_.metrics_url, " answered ", reply->status));
  }
  absl::StatusOr<MetricsSnapshot> metrics = MetricsSnapshot::parse(reply->body);
  if (!metrics.ok()) return metrics.status();
  if (!metrics->has("tandem:requests_in_flight")) {
    return absl::UnavailableError(
        absl::StrCat(options_.metrics_url, " has no tandem:requests_in_flight: not a tandem router"));
  }
  std::optional<Baseline> previous = std::move(baseline_);
  baseline_ = Baseline{std::move(*metrics), now_s};
  if (!previous.has_value()) return absl::FailedPreconditionError("first scrape: the baseline");
  const double age = now_s - previous->time_s;
  if (age > options_.max_age_s) {
    return absl::FailedPreconditionError(
        absl::StrFormat("the last good scrape is %.0f s old (stale): a new baseline", age));
  }
  return loadBetween(previous->metrics, baseline_->metrics, now_s, age, options_.slo);
}

}  // namespace tandem::planner
