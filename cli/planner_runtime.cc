#include "cli/planner_runtime.h"

#include <cstdio>

#include "common/status.h"
#include "planner/planner_metrics_http.h"
#include "planner/policy_resolver.h"

namespace tandem::cli {

absl::StatusOr<std::unique_ptr<PlannerRuntime>> PlannerRuntime::start(const PlannerFlags& flags,
                                                                      const std::string& router_metrics_url,
                                                                      planner::Connector* connector) {
  ASSIGN_OR_RETURN(std::chrono::milliseconds interval, parseInterval(flags.interval));
  ASSIGN_OR_RETURN(planner::ScalingBounds bounds, plannerBounds(flags));
  std::unique_ptr<PlannerRuntime> r(new PlannerRuntime());
  ASSIGN_OR_RETURN(r->policy_, planner::resolvePolicy(flags.policy, policySettings(flags)));
  ASSIGN_OR_RETURN(r->predictor_, planner::resolvePredictor(flags.predictor));
  planner::RouterMetricsSourceOptions source;
  source.metrics_url = router_metrics_url;
  source.slo = {.ttft_ms = flags.ttft_slo_ms, .itl_ms = flags.itl_slo_ms};
  // a baseline a few intervals old is still a fair measure; older is stale.
  source.max_age_s = std::max(30.0, 3 * std::chrono::duration<double>(interval).count());
  r->source_ = std::make_unique<planner::RouterMetricsSource>(source);
  if (flags.metrics_port >= 0) {
    ASSIGN_OR_RETURN(r->http_, planner::startPlannerMetricsHttp(flags.metrics_host, flags.metrics_port, &r->metrics_));
  }
  planner::PlannerLoopOptions options;
  options.interval = interval;
  options.bounds = bounds;
  r->loop_ = std::make_unique<planner::PlannerLoop>(options, r->source_.get(), r->predictor_.get(), r->policy_.get(),
                                                    connector, &r->metrics_);
  r->loop_->start();
  std::fprintf(stderr,
               "tandem planner: policy %s, predictor %s, connector %s, every %lld ms, prefill %d..%d, decode "
               "%d..%d, total <= %d; router metrics %s; planner metrics %s\n",
               flags.policy.c_str(), flags.predictor.c_str(), connector->name(),
               static_cast<long long>(interval.count()), bounds.min.prefill, bounds.max.prefill, bounds.min.decode,
               bounds.max.decode, bounds.max_total, router_metrics_url.c_str(),
               r->http_ != nullptr
                   ? ("http://" + flags.metrics_host + ":" + std::to_string(r->http_->port()) + "/metrics").c_str()
                   : "none");
  std::fflush(stderr);
  return r;
}

PlannerRuntime::~PlannerRuntime() { stop(); }

void PlannerRuntime::stop() {
  if (loop_ != nullptr) loop_->stop();
  if (http_ != nullptr) http_->shutdown(std::chrono::milliseconds(0));
}

}  // namespace tandem::cli
