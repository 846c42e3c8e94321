#include "server/worker/worker_metrics.h"

#include <sstream>

#include "prometheus/text_serializer.h"
#include "proto/convert/worker_enum_names.h"

namespace tandem::worker {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// seconds per transfer, from 100 us to 30 s.
const Histogram::BucketBoundaries kTransferBuckets = {
    0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
    0.25,   0.5,    1.0,   2.5,    5.0,   10.0, 30.0};

}  // namespace

WorkerMetrics::WorkerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  transfer_bytes_ = &BuildCounter().Name("tandem:kv_transfer_bytes_total")
                         .Help("KV block bytes moved between workers").Register(r);
  transfer_blocks_ = &BuildCounter().Name("tandem:kv_transfer_blocks_total")
                          .Help("KV blocks moved between workers").Register(r);
  transfer_seconds_ = &BuildHistogram().Name("tandem:kv_transfer_seconds")
                           .Help("duration of one KV transfer").Register(r);
  transfer_failures_ = &BuildCounter().Name("tandem:kv_transfer_failures_total")
                            .Help("remote prefills / KV transfers that failed, by reason")
                            .Register(r);
  prefills_ = &BuildCounter().Name("tandem:prefills_total")
                   .Help("prompts prefilled: local, remote, remote_failed (D) or served (P)")
                   .Register(r);
  running_ = &BuildGauge().Name("tandem:num_requests_running")
                  .Help("sequences in the engine's running batch").Register(r).Add({});
  waiting_ = &BuildGauge().Name("tandem:num_requests_waiting")
                  .Help("sequences queued in the engine").Register(r).Add({});
  kv_usage_ = &BuildGauge().Name("tandem:kv_cache_usage_perc")
                   .Help("fraction of KV cache blocks in use").Register(r).Add({});
}

void WorkerMetrics::setLoadSource(std::function<engine::EngineLoopStats()> stats) {
  std::lock_guard lock(load_mu_);
  load_ = std::move(stats);
}

void WorkerMetrics::observeTransfer(std::string_view direction, std::string_view transport,
                                    uint64_t bytes, int blocks, double seconds) {
  const std::map<std::string, std::string> labels = {{"direction", std::string(direction)},
                                                     {"transport", std::string(transport)}};
  transfer_bytes_->Add(labels).Increment(static_cast<double>(bytes));
  transfer_blocks_->Add(labels).Increment(blocks);
  transfer_seconds_->Add(labels, kTransferBuckets).Observe(seconds);
}

void WorkerMetrics::countTransferFailure(std::string_view reason) {
  transfer_failures_->Add({{"reason", std::string(reason)}}).Increment();
}

void WorkerMetrics::countPrefill(PrefillKind kind) {
  prefills_->Add({{"kind", std::string(rpc::prefillKindName(kind))}}).Increment();
}

std::string WorkerMetrics::render() {
  std::function<engine::EngineLoopStats()> source;
  {
    std::lock_guard lock(load_mu_);
    source = load_;
  }
  if (source) {
    const engine::EngineLoopStats s = source();
    running_->Set(s.num_running);
    waiting_->Set(s.num_waiting);
    kv_usage_->Set(s.num_blocks > 0
                       ? 1.0 - static_cast<double>(s.num_free_blocks) / s.num_blocks
                       : 0.0);
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace tandem::worker
