#include "planner/policy_resolver.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::planner {
namespace {

// the last interval is the next one.
class LastValuePredictor : public LoadPredictor {
 public:
  const char* name() const override { return "constant"; }
  void observe(const LoadSample& sample) override { last_ = sample; }
  LoadSample predict() const override { return last_; }

 private:
  LoadSample last_;
};

// llm-d's saturation rule per role, one worker at a time: up when a worker
// of the role is saturated (queue or KV over the threshold), down when one
// fewer would stay under half of it; holds a role while workers it asked
// for are not ready yet (no stacking of scale-ups during a cold start).
class SaturationPolicy : public ScalingPolicy {
 public:
  explicit SaturationPolicy(PolicySettings settings) : s_(settings) {}
  const char* name() const override { return "load"; }

  ScalingDecision decide(const PolicyInputs& in) override {
    const LoadSample& o = in.observed;
    ScalingDecision d;
    d.desired = in.current;
    std::string why;
    // decode: queue per worker and KV use.
    {
      const int n = in.current.decode;
      const double queue = o.decode_queue_requests, kv = o.decode_kv_utilization;
      if (o.ready.decode < n) {
        why += absl::StrFormat("decode: %d of %d ready, waiting; ", o.ready.decode, n);
      } else if (n == 0 || queue >= s_.decode_queue_threshold || kv >= s_.kv_utilization_threshold) {
        d.desired.decode = n + 1;
        why += absl::StrFormat("decode: saturated (queue %.1f/worker, kv %.2f): +1; ", queue, kv);
      } else if (n > 1 && queue * n / (n - 1) < s_.decode_queue_threshold / 2 &&
                 kv * n / (n - 1) < s_.kv_utilization_threshold / 2) {
        d.desired.decode = n - 1;
        why += absl::StrFormat("decode: %d workers would carry it (queue %.1f, kv %.2f): -1; ", n - 1, queue, kv);
      } else {
        why += absl::StrFormat("decode: ok (queue %.1f/worker, kv %.2f); ", queue, kv);
      }
    }
    // prefill: prompt tokens queued per prefill worker.
    {
      const int n = in.current.prefill;
      const double queued = o.prefill_queue_tokens;
      if (o.ready.prefill < n) {
        why += absl::StrFormat("prefill: %d of %d ready, waiting", o.ready.prefill, n);
      } else if (n > 0 && queued >= s_.prefill_queue_threshold_tokens) {
        d.desired.prefill = n + 1;
        why += absl::StrFormat("prefill: saturated (%.0f tokens queued/worker): +1", queued);
      } else if (n > 0 && (n == 1 ? queued == 0 : queued * n / (n - 1) < s_.prefill_queue_threshold_tokens / 2) &&
                 o.request_rate == 0) {
        d.desired.prefill = n - 1;
        why += "prefill: idle: -1";
      } else if (n > 1 && queued * n / (n - 1) < s_.prefill_queue_threshold_tokens / 2) {
        d.desired.prefill = n - 1;
        why += absl::StrFormat("prefill: %d workers would carry it (%.0f tokens queued/worker): -1", n - 1, queued);
      } else {
        why += absl::StrFormat("prefill: ok (%.0f tokens queued/worker)", queued);
      }
    }
    d.reason = why;
    return d;
  }

 private:
  const PolicySettings s_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ScalingPolicy>> resolvePolicy(const std::string& name,
                                                             const PolicySettings& settings) {
  if (name == "load") return std::make_unique<SaturationPolicy>(settings);
  if (name == "sla") {
    return absl::UnimplementedError("--policy sla needs the planner's policies (planner/policies.h), not linked in this build");
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown --policy '", name, "' (sla, load)"));
}

absl::StatusOr<std::unique_ptr<LoadPredictor>> resolvePredictor(const std::string& name) {
  if (name == "constant") return std::make_unique<LastValuePredictor>();
  return absl::InvalidArgumentError(absl::StrCat("unknown --predictor '", name, "' (constant)"));
}

}  // namespace tandem::planner
