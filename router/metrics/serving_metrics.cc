#include "router/metrics/serving_metrics.h"

#include <algorithm>
#include <sstream>

#include "prometheus/text_serializer.h"

namespace tandem::router {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// seconds; from 1 ms to 1 min, as vLLM's TTFT/ITL buckets.
const Histogram::BucketBoundaries kLatencyBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5,
    0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};

}  // namespace

void ServingMetrics::setLoadSource(std::function<generation::GeneratorLoad()> load) {
  std::lock_guard lock(load_mu_);
  load_ = std::move(load);
}

ServingMetrics::ServingMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  requests_ = &BuildCounter().Name("tandem:requests_total")
                   .Help("finished requests by endpoint and status code").Register(r);
  in_flight_ = &BuildGauge().Name("tandem:requests_in_flight")
                    .Help("requests being answered").Register(r).Add({});
  ttft_ = &BuildHistogram().Name("tandem:time_to_first_token_seconds")
               .Help("time from request arrival to its first token").Register(r)
               .Add({}, kLatencyBuckets);
  itl_ = &BuildHistogram().Name("tandem:inter_token_latency_seconds")
              .Help("time between consecutive tokens of a choice").Register(r)
              .Add({}, kLatencyBuckets);
  e2e_ = &BuildHistogram().Name("tandem:e2e_request_latency_seconds")
              .Help("time from arrival to the last token").Register(r)
              .Add({}, kLatencyBuckets);
  prompt_tokens_ = &BuildCounter().Name("tandem:prompt_tokens_total")
                        .Help("prompt tokens of finished requests").Register(r).Add({});
  generation_tokens_ = &BuildCounter().Name("tandem:generation_tokens_total")
                            .Help("generated tokens").Register(r).Add({});
  cached_tokens_ = &BuildCounter().Name("tandem:prefix_cache_hit_tokens_total")
                        .Help("prompt tokens found in the prefix cache").Register(r).Add({});
  auto& mix_requests = BuildCounter().Name(prompt_mix::kRequests)
                          .Help("finished requests' prompts by prompt-length range (range: its upper edge in tokens)")
                          .Register(r);
  auto& mix_prompt = BuildCounter().Name(prompt_mix::kPromptTokens)
                        .Help("prompt tokens of finished requests by prompt-length range").Register(r);
  auto& mix_uncached = BuildCounter().Name(prompt_mix::kUncachedTokens)
                          .Help("prompt tokens not found in the prefix cache, by prompt-length range")
                          .Register(r);
  auto& mix_output = BuildCounter().Name(prompt_mix::kOutputTokens)
                        .Help("generated tokens of finished requests by prompt-length range").Register(r);
  auto& mix_prompt_x_output = BuildCounter().Name(prompt_mix::kPromptXOutput)
                                 .Help("sum of prompt x generated tokens by prompt-length range").Register(r);
  // the fixed 13 ranges, each a series from the start: a scraper sees zeros, not nothing.
  for (size_t k = 0; k < prompt_mix::kRanges; ++k) {
    const prometheus::Labels range = {{prompt_mix::kRangeLabel, prompt_mix::rangeLabel(k)}};
    mix_[k] = {&mix_requests.Add(range), &mix_prompt.Add(range), &mix_uncached.Add(range),
               &mix_output.Add(range), &mix_prompt_x_output.Add(range)};
  }
  rejected_ = &BuildCounter().Name("tandem:requests_rejected_total")
                   .Help("requests refused as overloaded (429), by the limit they hit")
                   .Register(r);
  admitted_seqs_ = &BuildGauge().Name("tandem:admitted_seqs")
                        .Help("sequences (prompts x n) of the requests admitted now")
                        .Register(r).Add({});
  admitted_prompt_tokens_ = &BuildGauge().Name("tandem:admitted_prompt_tokens")
                                 .Help("prompt tokens (x n) of the requests admitted now")
                                 .Register(r).Add({});
  slow_clients_ = &BuildCounter().Name("tandem:slow_clients_cut_off_total")
                       .Help("streams closed because the client stopped reading").Register(r).Add({});
  running_ = &BuildGauge().Name("tandem:num_requests_running")
                  .Help("sequences in the engine's running batch").Register(r).Add({});
  waiting_ = &BuildGauge().Name("tandem:num_requests_waiting")
                  .Help("sequences queued in the engine (queue depth)").Register(r).Add({});
  kv_usage_ = &BuildGauge().Name("tandem:kv_cache_usage_perc")
                   .Help("fraction of KV cache blocks in use").Register(r).Add({});
  kv_blocks_ = &BuildGauge().Name("tandem:kv_cache_blocks")
                    .Help("KV cache blocks in total").Register(r).Add({});
}

void ServingMetrics::countRequest(const std::string& endpoint, int status) {
  requests_->Add({{"endpoint", endpoint}, {"status", std::to_string(status)}}).Increment();
}

void ServingMetrics::countRejected(const std::string& limit) {
  rejected_->Add({{"limit", limit}}).Increment();
}

void ServingMetrics::setAdmitted(int64_t seqs, int64_t prompt_tokens) {
  admitted_seqs_->Set(static_cast<double>(seqs));
  admitted_prompt_tokens_->Set(static_cast<double>(prompt_tokens));
}

void ServingMetrics::countPrompt(int prompt_tokens, int cached_tokens, int generated_tokens) {
  const double prompt = std::max(0, prompt_tokens);
  const double cached = std::clamp<double>(cached_tokens, 0, prompt);
  const double generated = std::max(0, generated_tokens);
  prompt_tokens_->Increment(prompt);
  generation_tokens_->Increment(generated);
  cached_tokens_->Increment(cached);
  const MixRange& range = mix_[prompt_mix::rangeOf(prompt)];
  range.requests->Increment();
  range.prompt_tokens->Increment(prompt);
  range.uncached_tokens->Increment(prompt - cached);
  range.output_tokens->Increment(generated);
  range.prompt_x_output->Increment(prompt * generated);
}

std::string ServingMetrics::render() {
  std::function<generation::GeneratorLoad()> source;
  {
    std::lock_guard lock(load_mu_);
    source = load_;
  }
  if (source) {
    const generation::GeneratorLoad load = source();
    running_->Set(load.num_running);
    waiting_->Set(load.num_waiting);
    kv_blocks_->Set(load.num_blocks);
    kv_usage_->Set(load.num_blocks > 0
                       ? 1.0 - static_cast<double>(load.num_free_blocks) / load.num_blocks
                       : 0.0);
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace tandem::router
