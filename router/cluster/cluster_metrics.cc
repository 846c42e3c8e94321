#include "router/cluster/cluster_metrics.h"

namespace tandem::router::cluster {

ClusterMetrics::ClusterMetrics(prometheus::Registry& registry) {
  prefills_ = &prometheus::BuildCounter()
                   .Name("tandem:router_prefills_total")
                   .Help("requests by how the decode worker prefilled the prompt")
                   .Register(registry);
  for (const char* kind : {"local", "remote", "remote_failed"}) prefills_->Add({{"kind", kind}});
  migrations_ = &prometheus::BuildCounter()
                     .Name("tandem:router_migrations_total")
                     .Help("requests moved to another decode worker after theirs failed")
                     .Register(registry)
                     .Add({});
  kv_resyncs_ = &prometheus::BuildCounter()
                     .Name("tandem:router_kv_resyncs_total")
                     .Help("KV index rebuilds of a worker from a snapshot")
                     .Register(registry)
                     .Add({});
  workers_ = &prometheus::BuildGauge()
                  .Name("tandem:router_workers")
                  .Help("workers known to the router by role and health")
                  .Register(registry);
  for (const char* role : {"prefill", "decode", "both"}) {
    for (const char* state : {"healthy", "unhealthy"}) workers_->Add({{"role", role}, {"state", state}});
  }
}

void ClusterMetrics::countPrefill(const std::string& kind) {
  if (kind.empty()) return;
  prefills_->Add({{"kind", kind}}).Increment();
}

void ClusterMetrics::setWorkers(const std::string& role, bool healthy, int count) {
  workers_->Add({{"role", role}, {"state", healthy ? "healthy" : "unhealthy"}}).Set(count);
}

}  // namespace tandem::router::cluster
