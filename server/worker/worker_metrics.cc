#include "server/worker/worker_metrics.h"

#include <cstdio>

#include "server/worker/expert_load.h"

#include <optional>
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

const Histogram::BucketBoundaries kTierLatencyBuckets(kvcache::TierLatency::kBounds.begin(),
                                                       kvcache::TierLatency::kBounds.end());

// adds to `h` what `now` observed beyond `before`.
void observeDelta(Histogram& h, const kvcache::TierLatency& now,
                  const kvcache::TierLatency& before) {
  if (now.count == before.count) return;
  std::vector<double> increments(now.buckets.size());
  for (size_t i = 0; i < increments.size(); ++i) {
    increments[i] = static_cast<double>(now.buckets[i] - before.buckets[i]);
  }
  h.ObserveMultiple(increments, now.sum - before.sum);
}

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
  // present at 0 from the start, so an alert on checksum failures (deploy/
  // prometheus) watches a series rather than its absence.
  transfer_failures_->Add({{"reason", "checksum"}});
  prefills_ = &BuildCounter().Name("tandem:prefills_total")
                   .Help("prompts prefilled: local, remote, remote_failed (D) or served (P)")
                   .Register(r);
  running_ = &BuildGauge().Name("tandem:num_requests_running")
                  .Help("sequences in the engine's running batch").Register(r).Add({});
  waiting_ = &BuildGauge().Name("tandem:num_requests_waiting")
                  .Help("sequences queued in the engine").Register(r).Add({});
  kv_usage_ = &BuildGauge().Name("tandem:kv_cache_usage_perc")
                   .Help("fraction of KV cache blocks in use").Register(r).Add({});
  tier_capacity_ = &BuildGauge().Name("tandem:kv_tier_capacity_blocks")
                        .Help("KV blocks a tier holds at most").Register(r);
  tier_used_ = &BuildGauge().Name("tandem:kv_tier_used_blocks")
                    .Help("KV blocks a tier holds now (device: in use by sequences)").Register(r);
  tier_io_mode_ = &BuildGauge().Name("tandem:kv_tier_io_mode")
                       .Help("1 for the io mode a tier uses").Register(r);
  tier_hits_ = &BuildCounter().Name("tandem:kv_tier_hits_total")
                    .Help("prompt blocks found in a tier below the pool").Register(r);
  tier_onboards_ = &BuildCounter().Name("tandem:kv_tier_onboards_total")
                        .Help("blocks loaded back from a tier into the pool").Register(r);
  tier_load_failures_ = &BuildCounter().Name("tandem:kv_tier_load_failures_total")
                             .Help("loads from a tier that failed (recomputed)").Register(r);
  tier_offloads_ = &BuildCounter().Name("tandem:kv_tier_offloads_total")
                        .Help("blocks stored into a tier (from the pool or the tier above)")
                        .Register(r);
  tier_evictions_ = &BuildCounter().Name("tandem:kv_tier_evictions_total")
                         .Help("blocks that left a tier").Register(r);
  tier_rejections_ = &BuildCounter().Name("tandem:kv_tier_admission_rejections_total")
                          .Help("stores a tier refused (admission, busy, disabled)").Register(r);
  tier_write_failures_ = &BuildCounter().Name("tandem:kv_tier_write_failures_total")
                              .Help("stores a tier took but failed to write (dropped)").Register(r);
  tier_bytes_read_ = &BuildCounter().Name("tandem:kv_tier_read_bytes_total")
                          .Help("bytes loaded from a tier").Register(r);
  tier_bytes_written_ = &BuildCounter().Name("tandem:kv_tier_written_bytes_total")
                             .Help("bytes stored into a tier").Register(r);
  tier_read_seconds_ = &BuildHistogram().Name("tandem:kv_tier_read_seconds")
                            .Help("duration of one block load from a tier").Register(r);
  tier_write_seconds_ = &BuildHistogram().Name("tandem:kv_tier_write_seconds")
                             .Help("duration of one block store into a tier").Register(r);
  onboarding_ = &BuildGauge().Name("tandem:kv_onboarding_requests")
                     .Help("requests waiting for prompt blocks from a lower tier")
                     .Register(r).Add({});
  onboarded_tokens_ = &BuildCounter().Name("tandem:kv_onboarded_tokens_total")
                           .Help("prompt tokens brought back from lower tiers (not recomputed)")
                           .Register(r).Add({});
}

void WorkerMetrics::setKvTierSource(std::function<std::vector<kvcache::KvTierStats>()> stats) {
  std::lock_guard lock(load_mu_);
  tiers_ = std::move(stats);
}

void WorkerMetrics::exportTiers(const std::vector<kvcache::KvTierStats>& tiers,
                                const engine::EngineLoopStats* load) {
  if (load != nullptr) {
    const std::map<std::string, std::string> device = {{"tier", "device"}};
    tier_capacity_->Add(device).Set(load->num_blocks);
    tier_used_->Add(device).Set(load->num_blocks - load->num_free_blocks);
    onboarding_->Set(load->num_onboarding);
    onboarded_tokens_->Increment(
        static_cast<double>(load->num_onboarded_tokens - onboarded_tokens_exported_));
    onboarded_tokens_exported_ = load->num_onboarded_tokens;
  }
  for (const kvcache::KvTierStats& now : tiers) {
    const std::map<std::string, std::string> labels = {
        {"tier", std::string(kvcache::kvTierName(now.tier))}};
    kvcache::KvTierStats& before = tiers_exported_[now.tier];
    tier_capacity_->Add(labels).Set(static_cast<double>(now.capacity_blocks));
    tier_used_->Add(labels).Set(static_cast<double>(now.used_blocks));
    tier_io_mode_->Add({{"tier", labels.at("tier")}, {"mode", now.io_mode}}).Set(1);
    const auto add = [&](prometheus::Family<prometheus::Counter>* family, uint64_t now_value,
                         uint64_t before_value) {
      family->Add(labels).Increment(static_cast<double>(now_value - before_value));
    };
    add(tier_hits_, now.hits, before.hits);
    add(tier_onboards_, now.onboards, before.onboards);
    add(tier_load_failures_, now.load_failures, before.load_failures);
    add(tier_offloads_, now.offloads, before.offloads);
    add(tier_evictions_, now.evictions, before.evictions);
    add(tier_rejections_, now.admission_rejections, before.admission_rejections);
    add(tier_write_failures_, now.write_failures, before.write_failures);
    add(tier_bytes_read_, now.bytes_read, before.bytes_read);
    add(tier_bytes_written_, now.bytes_written, before.bytes_written);
    observeDelta(tier_read_seconds_->Add(labels, kTierLatencyBuckets), now.read_seconds,
                 before.read_seconds);
    observeDelta(tier_write_seconds_->Add(labels, kTierLatencyBuckets), now.write_seconds,
                 before.write_seconds);
    before = now;
  }
}

void WorkerMetrics::setExpertSource(std::function<std::vector<int64_t>()> counts, int experts) {
  std::lock_guard lock(load_mu_);
  expert_counts_ = std::move(counts);
  experts_ = experts;
  if (moe_routed_ != nullptr) return;
  // registered only for a mixture: a dense model's /metrics stays as it was
  moe_routed_ = &BuildCounter().Name("tandem:moe_routed_tokens_total")
                     .Help("token-to-expert choices made (tokens x experts per token x layers)")
                     .Register(*registry_).Add({});
  moe_ratio_ = &BuildGauge().Name("tandem:moe_expert_load_ratio")
                    .Help("over every (layer, expert): its routed tokens over its layer's mean per "
                          "expert, at a quantile (1 = balanced; quantile 1 = the hottest expert)")
                    .Register(*registry_);
  moe_idle_ = &BuildGauge().Name("tandem:moe_experts_idle")
                   .Help("(layer, expert) pairs no token was routed to yet")
                   .Register(*registry_).Add({});
}

void WorkerMetrics::exportExperts() {
  if (!expert_counts_) return;
  const ExpertLoad load = summarizeExpertLoad(expert_counts_(), experts_);
  moe_routed_->Increment(static_cast<double>(load.routed - routed_exported_));
  routed_exported_ = load.routed;
  for (int q = 0; q < 5; ++q) {
    char name[16];
    std::snprintf(name, sizeof(name), "%g", ExpertLoad::kQuantiles[q]);
    moe_ratio_->Add({{"quantile", name}}).Set(load.ratio[q]);
  }
  moe_idle_->Set(static_cast<double>(load.idle));
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
  std::function<std::vector<kvcache::KvTierStats>()> tier_source;
  {
    std::lock_guard lock(load_mu_);
    source = load_;
    tier_source = tiers_;
  }
  std::optional<engine::EngineLoopStats> load;
  if (source) load = source();
  {
    // one scrape at a time moves the exported counters.
    std::lock_guard lock(load_mu_);
    exportTiers(tier_source ? tier_source() : std::vector<kvcache::KvTierStats>{},
                load ? &*load : nullptr);
    exportExperts();
  }
  if (source) {
    const engine::EngineLoopStats s = *load;
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
