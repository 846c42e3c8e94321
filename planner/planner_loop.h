// The live planner: every interval (its own TimerQueue) it takes the
// interval's load from a MetricsSource, feeds it to the LoadPredictor,
// asks the ScalingPolicy for the worker counts per role, clamps them to
// the bounds and tells the Connector about each role whose count changes.
// Every interval is logged as one JSON line with its inputs (observed and
// predicted load, the counts before, the decision and why) and exported in
// PlannerMetrics. An interval without a sample (a failed or stale scrape)
// or without the current counts (the connector failed) decides nothing:
// logged and counted, the workers stay as they are.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/status.h"
#include "common/timer_queue.h"
#include "planner/connector.h"
#include "planner/load_predictor.h"
#include "planner/metrics_source.h"
#include "planner/planner_metrics.h"
#include "planner/scaling_policy.h"

namespace tandem::planner {

struct PlannerLoopOptions {
  std::chrono::milliseconds interval{10000};
  ScalingBounds bounds;
  // where each interval's JSON line goes; default: stderr, prefixed
  // "tandem planner: ".
  std::function<void(const std::string& json_line)> log;
};

// InvalidArgument when a minimum exceeds its maximum, a bound is negative,
// or the minima exceed max_total.
absl::Status validateBounds(const ScalingBounds& bounds);

class PlannerLoop {
 public:
  // every pointer must outlive the loop; `metrics` may be null.
  PlannerLoop(PlannerLoopOptions options, MetricsSource* source, LoadPredictor* predictor,
              ScalingPolicy* policy, Connector* connector, PlannerMetrics* metrics);
  // stop()s.
  ~PlannerLoop();
  PlannerLoop(const PlannerLoop&) = delete;
  PlannerLoop& operator=(const PlannerLoop&) = delete;

  // runs tick() every interval from now on (the first after one interval),
  // on the loop's own thread; idempotent.
  void start();
  // stops the timer; returns after a tick in progress ended. Idempotent.
  void stop();

  // one interval now, at `now_s` seconds since start (tests drive it
  // directly). OK once a decision was made and every change it needed was
  // accepted; else the first error (also logged and counted).
  absl::Status tick(double now_s);

 private:
  absl::Status tickLocked(double now_s);
  void log(const std::string& line) const;

  const PlannerLoopOptions options_;
  MetricsSource* source_;
  LoadPredictor* predictor_;
  ScalingPolicy* policy_;
  Connector* connector_;
  PlannerMetrics* metrics_;
  std::mutex tick_mu_;  // one tick at a time (the timer's and a test's)
  std::unique_ptr<TimerQueue> timer_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace tandem::planner
