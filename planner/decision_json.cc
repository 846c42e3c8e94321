#include "planner/decision_json.h"

#include <cmath>

namespace tandem::planner {

nlohmann::json countsJson(const RoleCounts& c) { return {{"prefill", c.prefill}, {"decode", c.decode}}; }

nlohmann::json sampleJson(const LoadSample& s) {
  return {{"request_rate", s.request_rate},
          {"input_tokens", s.mean_input_tokens},
          {"output_tokens", s.mean_output_tokens},
          {"cached_fraction", s.cached_fraction},
          {"ttft_p50_ms", s.ttft_p50_ms},
          {"ttft_p95_ms", s.ttft_p95_ms},
          {"itl_p50_ms", s.itl_p50_ms},
          {"itl_p95_ms", s.itl_p95_ms},
          {"ttft_slo_attainment", s.ttft_slo_attainment},
          {"itl_slo_attainment", s.itl_slo_attainment},
          {"prefill_queue_tokens", s.prefill_queue_tokens},
          {"decode_kv_utilization", s.decode_kv_utilization},
          {"decode_queue_requests", s.decode_queue_requests},
          {"ready", countsJson(s.ready)}};
}

nlohmann::json decisionHeader(double time_s, const char* policy) {
  return {{"time_s", std::round(time_s * 1000) / 1000}, {"policy", policy}};
}

nlohmann::json decisionJson(double time_s, const char* policy, const PolicyInputs& in, const ScalingDecision& decision,
                            const RoleCounts& desired) {
  nlohmann::json line = decisionHeader(time_s, policy);
  line["observed"] = sampleJson(in.observed);
  line["predicted"] = sampleJson(in.predicted);
  line["current"] = countsJson(in.current);
  line["desired"] = countsJson(desired);
  line["reason"] = decision.reason;
  if (!(desired == decision.desired)) line["policy_asked"] = countsJson(decision.desired);
  return line;
}

}  // namespace tandem::planner
