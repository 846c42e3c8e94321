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
  kv_index_total_blocks_ = &prometheus::BuildGauge()
                                .Name("tandem:router_kv_index_total_blocks")
                                .Help("(worker, block) entries the router's KV index holds in all")
                                .Register(registry)
                                .Add({});
  kv_index_bytes_ = &prometheus::BuildGauge()
                         .Name("tandem:router_kv_index_bytes")
                         .Help("memory the router's KV index uses (estimate)")
                         .Register(registry)
                         .Add({});
  kv_index_evictions_ = &prometheus::BuildCounter()
                             .Name("tandem:router_kv_index_evictions_total")
                             .Help("KV index entries evicted by its per-worker and global bounds")
                             .Register(registry)
                             .Add({});
  route_decisions_ = &prometheus::BuildCounter()
                          .Name("tandem:router_route_decisions_total")
                          .Help("routing decisions by policy and outcome (cache_hit: the chosen "
                                "worker holds some of the prompt; spread: another did; cold: none)")
                          .Register(registry);
  route_prompt_tokens_ = &prometheus::BuildCounter()
                              .Name("tandem:router_route_prompt_tokens_total")
                              .Help("prompt tokens of the routed requests")
                              .Register(registry)
                              .Add({});
  route_cached_tokens_ = &prometheus::BuildCounter()
                              .Name("tandem:router_route_predicted_cached_tokens_total")
                              .Help("prompt tokens the KV index says the chosen worker holds (hit "
                                    "rate = this / tandem:router_route_prompt_tokens_total)")
                              .Register(registry)
                              .Add({});
  shed_ = &prometheus::BuildCounter()
               .Name("tandem:router_shed_requests_total")
               .Help("requests refused (429) because no worker could meet the TTFT SLO")
               .Register(registry)
               .Add({});
  workers_ = &prometheus::BuildGauge()
                  .Name("tandem:router_workers")
                  .Help("workers known to the router by role and state (healthy, unhealthy, draining)")
                  .Register(registry);
  for (tandem::v1::WorkerRole role :
       {tandem::v1::WORKER_ROLE_PREFILL, tandem::v1::WORKER_ROLE_DECODE, tandem::v1::WORKER_ROLE_BOTH}) {
    for (const char* state : {"healthy", "unhealthy", "draining"}) {
      workers_->Add({{"role", std::string(rpc::workerRoleName(role))}, {"state", state}});
    }
  }
  auto role_gauge = [&registry](const char* name, const char* help) {
    return &prometheus::BuildGauge().Name(name).Help(help).Register(registry);
  };
  role_running_ = role_gauge("tandem:router_role_requests_running",
                             "sequences running on the healthy workers of a role");
  role_waiting_ = role_gauge("tandem:router_role_requests_waiting",
                             "sequences queued on the healthy workers of a role");
  role_prefill_queued_ = role_gauge("tandem:router_role_prefill_tokens_queued",
                                    "prompt tokens waiting for prefill on the healthy workers of a role");
  role_kv_blocks_ = role_gauge("tandem:router_role_kv_blocks",
                               "KV blocks of the healthy workers of a role");
  role_kv_used_ = role_gauge("tandem:router_role_kv_used_blocks",
                             "KV blocks in use on the healthy workers of a role");
  for (tandem::v1::WorkerRole role :
       {tandem::v1::WORKER_ROLE_PREFILL, tandem::v1::WORKER_ROLE_DECODE, tandem::v1::WORKER_ROLE_BOTH}) {
    setRoleLoad(role, RoleLoad{});
  }
}

void ClusterMetrics::setRoleLoad(tandem::v1::WorkerRole role, const RoleLoad& load) {
  const prometheus::Labels labels{{"role", std::string(rpc::workerRoleName(role))}};
  role_running_->Add(labels).Set(static_cast<double>(load.running));
  role_waiting_->Add(labels).Set(static_cast<double>(load.waiting));
  role_prefill_queued_->Add(labels).Set(static_cast<double>(load.prefill_tokens_queued));
  role_kv_blocks_->Add(labels).Set(static_cast<double>(load.kv_blocks));
  role_kv_used_->Add(labels).Set(static_cast<double>(load.kv_used_blocks));
}

void ClusterMetrics::countPrefill(tandem::v1::PrefillKind kind) {
  const std::string_view name = rpc::prefillKindName(kind);
  if (name.empty()) return;
  prefills_->Add({{"kind", std::string(name)}}).Increment();
}

void ClusterMetrics::setWorkers(tandem::v1::WorkerRole role, WorkerHealth health, int count) {
  const char* state = health == WorkerHealth::kHealthy     ? "healthy"
                      : health == WorkerHealth::kUnhealthy ? "unhealthy"
                                                           : "draining";
  workers_->Add({{"role", std::string(rpc::workerRoleName(role))}, {"state", state}}).Set(count);
}

void ClusterMetrics::setKvIndexBlocks(const std::string& worker, size_t blocks) {
  kv_index_blocks_->Add({{"worker", worker}}).Set(static_cast<double>(blocks));
}

void ClusterMetrics::setKvIndexTotals(size_t blocks, size_t bytes, uint64_t evictions) {
  kv_index_total_blocks_->Set(static_cast<double>(blocks));
  kv_index_bytes_->Set(static_cast<double>(bytes));
  const double delta = static_cast<double>(evictions) - kv_index_evictions_->Value();
  if (delta > 0) kv_index_evictions_->Increment(delta);
}

void ClusterMetrics::countRoute(std::string_view policy, RouteOutcome outcome, int64_t prompt_tokens,
                                int64_t cached_tokens) {
  const char* name = outcome == RouteOutcome::kCacheHit ? "cache_hit"
                     : outcome == RouteOutcome::kSpread ? "spread"
                                                        : "cold";
  route_decisions_->Add({{"policy", std::string(policy)}, {"outcome", name}}).Increment();
  route_prompt_tokens_->Increment(static_cast<double>(prompt_tokens));
  route_cached_tokens_->Increment(static_cast<double>(cached_tokens));
}

void ClusterMetrics::removeKvIndexWorker(const std::string& worker) {
  const prometheus::Labels labels{{"worker", worker}};
  // Add returns the existing series; Remove then drops it.
  if (kv_index_blocks_->Has(labels)) kv_index_blocks_->Remove(&kv_index_blocks_->Add(labels));
}

}  // namespace tandem::router::cluster
