#include "planner/planner_metrics.h"

#include <sstream>

#include "prometheus/text_serializer.h"

namespace tandem::planner {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;

}  // namespace

PlannerMetrics::PlannerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  auto gauge = [&r](const char* name, const char* help) {
    return &BuildGauge().Name(name).Help(help).Register(r).Add({});
  };
  desired_ = &BuildGauge().Name("tandem:planner_desired_replicas")
                  .Help("workers per role the planner's last decision asked for").Register(r);
  current_ = &BuildGauge().Name("tandem:planner_current_replicas")
                  .Help("workers per role (ready and starting) before the last decision").Register(r);
  for (Role role : {Role::kPrefill, Role::kDecode}) {
    desired_->Add({{"role", roleName(role)}});
    current_->Add({{"role", roleName(role)}});
  }
  observed_rate_ = gauge("tandem:planner_observed_request_rate", "requests per second in the last interval");
  predicted_rate_ = gauge("tandem:planner_predicted_request_rate", "requests per second predicted for the next interval");
  observed_isl_ = gauge("tandem:planner_observed_input_tokens", "mean prompt tokens in the last interval");
  predicted_isl_ = gauge("tandem:planner_predicted_input_tokens", "mean prompt tokens predicted for the next interval");
  observed_osl_ = gauge("tandem:planner_observed_output_tokens", "mean output tokens in the last interval");
  predicted_osl_ = gauge("tandem:planner_predicted_output_tokens", "mean output tokens predicted for the next interval");
  ttft_attainment_ = gauge("tandem:planner_ttft_slo_attainment",
                           "share of the last interval's first tokens within the TTFT SLO");
  itl_attainment_ = gauge("tandem:planner_itl_slo_attainment",
                          "share of the last interval's inter-token gaps within the ITL SLO");
  ttft_attainment_->Set(1);
  itl_attainment_->Set(1);
  decisions_ = &BuildCounter().Name("tandem:planner_decisions_total")
                    .Help("intervals the planner decided on").Register(r).Add({});
  scale_events_ = &BuildCounter().Name("tandem:planner_scale_events_total")
                       .Help("worker count changes per role and direction").Register(r);
  errors_ = &BuildCounter().Name("tandem:planner_errors_total")
                 .Help("intervals without a decision (metrics, connector) and refused changes (scale)")
                 .Register(r);
  for (const char* stage : {"metrics", "connector", "scale"}) errors_->Add({{"stage", stage}});
}

void PlannerMetrics::recordDecision(const LoadSample& observed, const LoadSample& predicted,
                                    const RoleCounts& current, const RoleCounts& desired) {
  for (Role role : {Role::kPrefill, Role::kDecode}) {
    desired_->Add({{"role", roleName(role)}}).Set(desired[role]);
    current_->Add({{"role", roleName(role)}}).Set(current[role]);
  }
  observed_rate_->Set(observed.request_rate);
  predicted_rate_->Set(predicted.request_rate);
  observed_isl_->Set(observed.mean_input_tokens);
  predicted_isl_->Set(predicted.mean_input_tokens);
  observed_osl_->Set(observed.mean_output_tokens);
  predicted_osl_->Set(predicted.mean_output_tokens);
  ttft_attainment_->Set(observed.ttft_slo_attainment);
  itl_attainment_->Set(observed.itl_slo_attainment);
  decisions_->Increment();
}

void PlannerMetrics::countScaleEvent(Role role, bool up) {
  scale_events_->Add({{"role", roleName(role)}, {"direction", up ? "up" : "down"}}).Increment();
}

void PlannerMetrics::countError(const std::string& stage) { errors_->Add({{"stage", stage}}).Increment(); }

std::string PlannerMetrics::render() {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace tandem::planner
