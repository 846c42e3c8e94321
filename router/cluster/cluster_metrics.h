// The router's cluster metrics, next to the serving metrics on the same
// Prometheus registry: how prompts were prefilled (from each decode
// worker's first message), request migrations, workers by role and health,
// and KV index resyncs.
#pragma once

#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace tandem::router::cluster {

class ClusterMetrics {
 public:
  // registers the families on `registry`, which must outlive this object.
  explicit ClusterMetrics(prometheus::Registry& registry);

  // tandem:router_prefills_total{kind}: kind is "local", "remote" or
  // "remote_failed" (other strings are counted under their own label).
  void countPrefill(const std::string& kind);
  // tandem:router_migrations_total
  void countMigration() { migrations_->Increment(); }
  // tandem:router_kv_resyncs_total
  void countKvResync() { kv_resyncs_->Increment(); }
  // tandem:router_workers{role, state="healthy|unhealthy"} = count.
  void setWorkers(const std::string& role, bool healthy, int count);

 private:
  prometheus::Family<prometheus::Counter>* prefills_;
  prometheus::Counter* migrations_;
  prometheus::Counter* kv_resyncs_;
  prometheus::Family<prometheus::Gauge>* workers_;
};

}  // namespace tandem::router::cluster
