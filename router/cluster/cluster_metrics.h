// The router's cluster metrics, next to the serving metrics on the same
// Prometheus registry: how prompts were prefilled (from each decode
// worker's first message), request migrations, workers by role and health,
// and the KV index: snapshots applied, resyncs, blocks held per worker.
#pragma once

#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::router::cluster {

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
  // tandem:router_workers{role, state="healthy|unhealthy"} = count; role
  // is rpc::workerRoleName(role).
  void setWorkers(tandem::v1::WorkerRole role, bool healthy, int count);

 private:
  prometheus::Family<prometheus::Counter>* prefills_;
  prometheus::Counter* migrations_;
  prometheus::Counter* kv_resyncs_;
  prometheus::Counter* kv_snapshots_;
  prometheus::Counter* kv_snapshots_refused_;
  prometheus::Family<prometheus::Gauge>* kv_index_blocks_;
  prometheus::Family<prometheus::Gauge>* workers_;
};

}  // namespace tandem::router::cluster
