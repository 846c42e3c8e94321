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
  kv_snapshots_ = &prometheus::BuildCounter()
                       .Name("tandem:router_kv_snapshots_total")
                       .Help("KV snapshots of workers applied to the KV index (first syncs and resyncs)")
                       .Register(registry)
                       .Add({});
  kv_index_blocks_ = &prometheus::BuildGauge()
                          .Name("tandem:router_kv_index_blocks")
                          .Help("KV blocks the router's index holds, per worker address")
                          .Register(registry);
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

void ClusterMetrics::setKvIndexBlocks(const std::string& worker, size_t blocks) {
  kv_index_blocks_->Add({{"worker", worker}}).Set(static_cast<double>(blocks));
}

void ClusterMetrics::removeKvIndexWorker(const std::string& worker) {
  const prometheus::Labels labels{{"worker", worker}};
  // Add returns the existing series; Remove then drops it.
  if (kv_index_blocks_->Has(labels)) kv_index_blocks_->Remove(&kv_index_blocks_->Add(labels));
}

}  // namespace tandem::router::cluster
