// The router's cluster metrics, next to the serving metrics on the same
// Prometheus registry: how prompts were prefilled (from each decode
// worker's first message), request migrations, workers by role and health,
// the KV index: snapshots applied, resyncs, blocks held per worker and in
// all, its memory and evictions; and routing: decisions by policy and
// outcome, the prompt tokens routed and those predicted cached where they
// went (their ratio is the decisions' hit rate), requests shed; and the
// workers' load per role (the planner's saturation signals).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "router/cluster/routing_policy.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::router::cluster {

// the state label of tandem:router_workers.
enum class WorkerHealth { kHealthy, kUnhealthy, kDraining };

class ClusterMetrics {
 public:
  // registers the families on `registry`, which must outlive this object.
  explicit ClusterMetrics(prometheus::Registry& registry);

  // tandem:router_prefills_total{kind}: kind is "local", "remote" or
  // "remote_failed" (rpc::prefillKindName); an unspecified kind is not counted.
  void countPrefill(tandem::v1::PrefillKind kind);
  // tandem:router_migrations_total
  void countMigration() { migrations_->Increment(); }
  // tandem:router_kv_resyncs_total: snapshots of a worker after its first.
  void countKvResync() { kv_resyncs_->Increment(); }
  // tandem:router_kv_snapshots_total: every snapshot the KV index applied
  // (a worker's first one and its resyncs).
  void countKvSnapshot() { kv_snapshots_->Increment(); }
  // tandem:router_kv_snapshots_refused_total: snapshots refused for holding
  // more blocks than the worker can store (KvSubscriberOptions).
  void countKvSnapshotRefused() { kv_snapshots_refused_->Increment(); }
  // tandem:router_kv_index_blocks{worker=address} = blocks the KV index
  // holds for the worker.
  void setKvIndexBlocks(const std::string& worker, size_t blocks);
  // drops the worker's tandem:router_kv_index_blocks series (it left).
  void removeKvIndexWorker(const std::string& worker);
  // tandem:router_kv_index_total_blocks, tandem:router_kv_index_bytes (an
  // estimate), tandem:router_kv_index_evictions_total (to `evictions`).
  void setKvIndexTotals(size_t blocks, size_t bytes, uint64_t evictions);
  // tandem:router_route_decisions_total{policy, outcome="cache_hit|spread|cold"},
  // tandem:router_route_prompt_tokens_total += prompt_tokens,
  // tandem:router_route_predicted_cached_tokens_total += cached_tokens.
  void countRoute(std::string_view policy, RouteOutcome outcome, int64_t prompt_tokens,
                  int64_t cached_tokens);
  // tandem:router_shed_requests_total: refused because no worker could
  // meet the TTFT SLO.
  void countShed() { shed_->Increment(); }
  // tandem:router_workers{role, state="healthy|unhealthy|draining"} = count;
  // role is rpc::workerRoleName(role). "healthy" ones take new requests;
  // "draining" ones answer but only finish their streams (scale-down).
  void setWorkers(tandem::v1::WorkerRole role, WorkerHealth health, int count);
  // the load of the healthy, not draining workers of `role`, summed from their last
  // WorkerStats (what the planner scales on): tandem:router_role_requests_running{role},
  // tandem:router_role_requests_waiting{role}, tandem:router_role_prefill_tokens_queued{role},
  // tandem:router_role_kv_blocks{role} and tandem:router_role_kv_used_blocks{role}.
  struct RoleLoad {
    int64_t running = 0;
    int64_t waiting = 0;
    int64_t prefill_tokens_queued = 0;
    int64_t kv_blocks = 0;
    int64_t kv_used_blocks = 0;
  };
  void setRoleLoad(tandem::v1::WorkerRole role, const RoleLoad& load);

 private:
  prometheus::Family<prometheus::Counter>* prefills_;
  prometheus::Counter* migrations_;
  prometheus::Counter* kv_resyncs_;
  prometheus::Counter* kv_snapshots_;
  prometheus::Counter* kv_snapshots_refused_;
  prometheus::Family<prometheus::Gauge>* kv_index_blocks_;
  prometheus::Family<prometheus::Gauge>* workers_;
  prometheus::Family<prometheus::Gauge>* role_running_;
  prometheus::Family<prometheus::Gauge>* role_waiting_;
  prometheus::Family<prometheus::Gauge>* role_prefill_queued_;
  prometheus::Family<prometheus::Gauge>* role_kv_blocks_;
  prometheus::Family<prometheus::Gauge>* role_kv_used_;
  prometheus::Gauge* kv_index_total_blocks_;
  prometheus::Gauge* kv_index_bytes_;
  prometheus::Counter* kv_index_evictions_;
  prometheus::Family<prometheus::Counter>* route_decisions_;
  prometheus::Counter* route_prompt_tokens_;
  prometheus::Counter* route_cached_tokens_;
  prometheus::Counter* shed_;
};

}  // namespace tandem::router::cluster
