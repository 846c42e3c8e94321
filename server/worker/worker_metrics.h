// A worker's Prometheus metrics (GET /metrics), under the tandem: prefix:
// KV transfers (bytes, blocks, per-transfer seconds, failures by reason),
// how prompts were prefilled (local, remote, remote_failed on D; served on
// P), the engine's load, sampled at scrape time, and the KV tiers below the
// pool (tandem:kv_tier_*{tier="host"|"disk"}; capacity and used blocks also
// for tier="device"), sampled at scrape time from their cumulative counters.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "kvcache/tiers/kv_tier_stats.h"
#include "server/engine/engine_loop.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::worker {

// tandem:prefills_total{kind}; the label is rpc::prefillKindName(kind).
using PrefillKind = tandem::v1::PrefillKind;

class WorkerMetrics {
 public:
  WorkerMetrics();

  // `stats` is called at each scrape for the load gauges.
  void setLoadSource(std::function<engine::EngineLoopStats()> stats);
  // `stats` is called at each scrape for the KV tier metrics.
  void setKvTierSource(std::function<std::vector<kvcache::KvTierStats>()> stats);

  // a mixture of experts: `counts` ([layers * experts] tokens routed,
  // ModelRunner::expertTokens) is called at each scrape for the bounded
  // routing metrics of expert_load.h.
  void setExpertSource(std::function<std::vector<int64_t>()> counts, int experts);

  // one transfer that completed: direction "sent" or "received", transport
  // "grpc" or "shm".
  void observeTransfer(std::string_view direction, std::string_view transport, uint64_t bytes,
                       int blocks, double seconds);
  // a remote prefill or a transfer that failed, by reason ("checksum",
  // "timeout", "prefill_unavailable", ...).
  void countTransferFailure(std::string_view reason);
  void countPrefill(PrefillKind kind);

  // the text exposition format (version 0.0.4).
  std::string render();

  prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::mutex load_mu_;
  std::function<engine::EngineLoopStats()> load_;  // guarded by load_mu_
  std::function<std::vector<kvcache::KvTierStats>()> tiers_;  // guarded by load_mu_
  // the counters as last exported, per tier, so each scrape adds the change.
  std::map<kvcache::KvTier, kvcache::KvTierStats> tiers_exported_;  // guarded by load_mu_
  void exportTiers(const std::vector<kvcache::KvTierStats>& tiers,
                   const engine::EngineLoopStats* load);
  prometheus::Family<prometheus::Counter>* transfer_bytes_;
  prometheus::Family<prometheus::Counter>* transfer_blocks_;
  prometheus::Family<prometheus::Histogram>* transfer_seconds_;
  prometheus::Family<prometheus::Counter>* transfer_failures_;
  prometheus::Family<prometheus::Counter>* prefills_;
  prometheus::Gauge* running_;
  prometheus::Gauge* waiting_;
  prometheus::Gauge* kv_usage_;
  prometheus::Family<prometheus::Gauge>* tier_capacity_;
  prometheus::Family<prometheus::Gauge>* tier_used_;
  prometheus::Family<prometheus::Gauge>* tier_io_mode_;
  prometheus::Family<prometheus::Counter>* tier_hits_;
  prometheus::Family<prometheus::Counter>* tier_onboards_;
  prometheus::Family<prometheus::Counter>* tier_load_failures_;
  prometheus::Family<prometheus::Counter>* tier_offloads_;
  prometheus::Family<prometheus::Counter>* tier_evictions_;
  prometheus::Family<prometheus::Counter>* tier_rejections_;
  prometheus::Family<prometheus::Counter>* tier_write_failures_;
  prometheus::Family<prometheus::Counter>* tier_bytes_read_;
  prometheus::Family<prometheus::Counter>* tier_bytes_written_;
  prometheus::Family<prometheus::Histogram>* tier_read_seconds_;
  prometheus::Family<prometheus::Histogram>* tier_write_seconds_;
  std::function<std::vector<int64_t>()> expert_counts_;  // guarded by load_mu_
  int experts_ = 0;                                      // guarded by load_mu_
  int64_t routed_exported_ = 0;                          // guarded by load_mu_
  void exportExperts();
  prometheus::Counter* moe_routed_ = nullptr;
  prometheus::Family<prometheus::Gauge>* moe_ratio_ = nullptr;
  prometheus::Gauge* moe_idle_ = nullptr;
  prometheus::Gauge* onboarding_;
  prometheus::Counter* onboarded_tokens_;
  int64_t onboarded_tokens_exported_ = 0;  // guarded by load_mu_
};

}  // namespace tandem::worker
