// The planner's own Prometheus metrics (its /metrics, --metrics-port): what
// it decided and on what inputs, for dashboards and for an HPA/KEDA that
// consumes the desired-replicas gauge.
//   tandem:planner_desired_replicas{role}, tandem:planner_current_replicas{role}
//   tandem:planner_observed_request_rate, tandem:planner_predicted_request_rate
//   tandem:planner_observed_input_tokens, tandem:planner_predicted_input_tokens
//   tandem:planner_observed_output_tokens, tandem:planner_predicted_output_tokens
//   tandem:planner_ttft_slo_attainment, tandem:planner_itl_slo_attainment
//   tandem:planner_decisions_total, tandem:planner_scale_events_total{role,direction}
//   tandem:planner_errors_total{stage="metrics|connector|scale"}
#pragma once

#include <memory>
#include <string>

#include "planner/planner_types.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace tandem::planner {

class PlannerMetrics {
 public:
  PlannerMetrics();

  // one decision: what was observed and predicted, the counts before and
  // after.
  void recordDecision(const LoadSample& observed, const LoadSample& predicted, const RoleCounts& current,
                      const RoleCounts& desired);
  // a worker count of `role` changed by the connector (up or down).
  void countScaleEvent(Role role, bool up);
  // an interval without a decision or a failed change: stage "metrics"
  // (no sample), "connector" (counts unknown) or "scale" (a change refused).
  void countError(const std::string& stage);

  // the text exposition format (version 0.0.4).
  std::string render();

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>* desired_;
  prometheus::Family<prometheus::Gauge>* current_;
  prometheus::Gauge* observed_rate_;
  prometheus::Gauge* predicted_rate_;
  prometheus::Gauge* observed_isl_;
  prometheus::Gauge* predicted_isl_;
  prometheus::Gauge* observed_osl_;
  prometheus::Gauge* predicted_osl_;
  prometheus::Gauge* ttft_attainment_;
  prometheus::Gauge* itl_attainment_;
  prometheus::Counter* decisions_;
  prometheus::Family<prometheus::Counter>* scale_events_;
  prometheus::Family<prometheus::Counter>* errors_;
};

}  // namespace tandem::planner
