// A worker's Prometheus metrics (GET /metrics), under the tandem: prefix:
// KV transfers (bytes, blocks, per-transfer seconds, failures by reason),
// how prompts were prefilled (local, remote, remote_failed on D; served on
// P), and the engine's load, sampled at scrape time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
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
  prometheus::Family<prometheus::Counter>* transfer_bytes_;
  prometheus::Family<prometheus::Counter>* transfer_blocks_;
  prometheus::Family<prometheus::Histogram>* transfer_seconds_;
  prometheus::Family<prometheus::Counter>* transfer_failures_;
  prometheus::Family<prometheus::Counter>* prefills_;
  prometheus::Gauge* running_;
  prometheus::Gauge* waiting_;
  prometheus::Gauge* kv_usage_;
};

}  // namespace tandem::worker
