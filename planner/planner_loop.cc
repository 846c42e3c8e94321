#include "planner/planner_loop.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "planner/decision_json.h"
#include "planner/policies.h"

namespace tandem::planner {
namespace {

constexpr Role kRoles[] = {Role::kPrefill, Role::kDecode};

}  // namespace

absl::Status validateBounds(const ScalingBounds& bounds) {
  for (Role role : kRoles) {
    if (bounds.min[role] < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--min-", roleName(role), " must be >= 0"));
    }
    if (bounds.min[role] > bounds.max[role]) {
      return absl::InvalidArgumentError(absl::StrCat("--min-", roleName(role), " ", bounds.min[role],
                                                     " exceeds --max-", roleName(role), " ",
                                                     bounds.max[role]));
    }
  }
  if (bounds.min.total() > bounds.max_total) {
    return absl::InvalidArgumentError(absl::StrCat("the minima (", bounds.min.total(),
                                                   " workers) exceed --max-total ", bounds.max_total));
  }
  return absl::OkStatus();
}

PlannerLoop::PlannerLoop(PlannerLoopOptions options, MetricsSource* source, LoadPredictor* predictor,
                         ScalingPolicy* policy, Connector* connector, PlannerMetrics* metrics)
    : options_(std::move(options)),
      source_(source),
      predictor_(predictor),
      policy_(policy),
      connector_(connector),
      metrics_(metrics),
      started_(std::chrono::steady_clock::now()) {}

PlannerLoop::~PlannerLoop() { stop(); }

void PlannerLoop::start() {
  if (timer_ != nullptr) return;
  timer_ = std::make_unique<TimerQueue>("planner");
  timer_->runEvery(options_.interval, [this] {
    const double now_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    (void)tick(now_s);
  });
}

void PlannerLoop::stop() {
  if (timer_ == nullptr) return;
  timer_->stop();
  timer_.reset();
}

void PlannerLoop::log(const std::string& line) const {
  if (options_.log) {
    options_.log(line);
    return;
  }
  std::fprintf(stderr, "tandem planner: %s\n", line.c_str());
  std::fflush(stderr);
}

absl::Status PlannerLoop::tick(double now_s) {
  std::lock_guard lock(tick_mu_);
  return tickLocked(now_s);
}

absl::Status PlannerLoop::tickLocked(double now_s) {
  nlohmann::json line = decisionHeader(now_s, policy_->name());
  line["predictor"] = predictor_->name();
  line["connector"] = connector_->name();
  absl::StatusOr<LoadSample> observed = source_->next(now_s);
  if (!observed.ok()) {
    if (metrics_ != nullptr) metrics_->countError("metrics");
    line["decision"] = "none";
    line["error"] = absl::StrCat("metrics: ", observed.status().ToString());
    log(line.dump());
    return observed.status();
  }
  predictor_->observe(*observed);
  const LoadSample predicted = predictor_->predict();
  absl::StatusOr<RoleCounts> current = connector_->current();
  line["observed"] = sampleJson(*observed);
  line["predicted"] = sampleJson(predicted);
  if (!current.ok()) {
    if (metrics_ != nullptr) metrics_->countError("connector");
    line["decision"] = "none";
    line["error"] = absl::StrCat("connector: ", current.status().ToString());
    log(line.dump());
    return current.status();
  }
  const PolicyInputs inputs{.observed = *observed, .predicted = predicted, .current = *current, .bounds = options_.bounds};
  const ScalingDecision decision = policy_->decide(inputs);
  const RoleCounts desired = clampToBounds(decision.desired, options_.bounds);
  line.update(decisionJson(now_s, policy_->name(), inputs, decision, desired));
  if (metrics_ != nullptr) metrics_->recordDecision(*observed, predicted, *current, desired);
  absl::Status first_error;
  nlohmann::json changes = nlohmann::json::array();
  for (Role role : kRoles) {
    if (desired[role] == (*current)[role]) continue;
    absl::Status status = connector_->scale(role, desired[role]);
    nlohmann::json change = {{"role", roleName(role)}, {"from", (*current)[role]}, {"to", desired[role]}};
    if (status.ok()) {
      if (metrics_ != nullptr) metrics_->countScaleEvent(role, desired[role] > (*current)[role]);
    } else {
      if (metrics_ != nullptr) metrics_->countError("scale");
      change["error"] = status.ToString();
      if (first_error.ok()) first_error = status;
    }
    changes.push_back(std::move(change));
  }
  line["decision"] = changes.empty() ? "hold" : "scale";
  if (!changes.empty()) line["changes"] = std::move(changes);
  log(line.dump());
  return first_error;
}

}  // namespace tandem::planner
