#include "router/cluster/cluster_metrics.h"

#include "proto/convert/worker_enum_names.h"

namespace tandem::router::cluster {

ClusterMetrics::ClusterMetrics(prometheus::Registry& registry) {
  prefills_ = &prometheus::BuildCounter()
                   .Name("tandem:router_prefills_total")
                   .Help("requests by how the decode worker prefilled the prompt")
                   .Register(registry);
  for (tandem::v1::PrefillKind kind : {tandem::v1::PREFILL_KIND_LOCAL, tandem::v1::PREFILL_KIND_REMOTE,
                                       tandem::v1::PREFILL_KIND_REMOTE_FAILED}) {
    prefills_->Add({{"kind", std::string(rpc::prefillKindName(kind))}});
  }
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
  kv_snapshots_refused_ = &prometheus::BuildCounter()
                               .Name("tandem:router_kv_snapshots_refused_total")
                               .Help("KV snapshots refused for holding more blocks than the worker can store")
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
  for (tandem::v1::WorkerRole role :
       {tandem::v1::WORKER_ROLE_PREFILL, tandem::v1::WORKER_ROLE_DECODE, tandem::v1::WORKER_ROLE_BOTH}) {
    for (const char* state : {"healthy", "unhealthy"}) {
      workers_->Add({{"role", std::string(rpc::workerRoleName(role))}, {"state", state}});
    }
  }
}

void ClusterMetrics::countPrefill(tandem::v1::PrefillKind kind) {
  const std::string_view name = rpc::prefillKindName(kind);
  if (name.empty()) return;
  prefills_->Add({{"kind", std::string(name)}}).Increment();
}

void ClusterMetrics::setWorkers(tandem::v1::WorkerRole role, bool healthy, int count) {
  workers_->Add({{"role", std::string(rpc::workerRoleName(role))},
                 {"state", healthy ? "healthy" : "unhealthy"}})
      .Set(count);
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
