// The router's Prometheus metrics (GET /metrics), named as vLLM names its
// own where one exists, under the tandem: prefix: request counts by
// endpoint and status, requests in flight, TTFT, inter-token latency and
// end-to-end latency histograms, prompt/generation/cached token counters,
// the prompt-length mix (common/prompt_mix_series.h: per prompt-length range
// the prompts, their prompt, uncached and generated tokens and prompt x
// generated; uncached is the prompt less the prefix-cache hit the decode
// worker reported, so a prefill worker's own hits are not seen), and the
// generator's queue depth and KV usage (sampled at scrape time);
// admission: what is admitted now (sequences, prompt tokens) and the
// requests refused as overloaded, by the limit they hit.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/prompt_mix_series.h"
#include "generation/generator.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace tandem::router {

class ServingMetrics {
 public:
  ServingMetrics();

  // `load` is called at each scrape for the generator gauges.
  void setLoadSource(std::function<generation::GeneratorLoad()> load);

  // one finished HTTP/gRPC request: its endpoint ("completions", "chat",
  // "grpc_generate", "models", ...) and status code.
  void countRequest(const std::string& endpoint, int status);
  void requestStarted() { in_flight_->Increment(); }
  void requestEnded() { in_flight_->Decrement(); }
  void observeTtft(double seconds) { ttft_->Observe(seconds); }
  void observeInterToken(double seconds) { itl_->Observe(seconds); }
  void observeE2e(double seconds) { e2e_->Observe(seconds); }
  // one prompt of a finished request: its length, the tokens of it its
  // worker found in the prefix cache (clamped to [0, prompt]) and those its
  // choices generated; into the token counters and its prompt-length range.
  void countPrompt(int prompt_tokens, int cached_tokens, int generated_tokens);
  // a request refused as overloaded (429 / RESOURCE_EXHAUSTED) at `limit`:
  // "requests", "seqs", "prompt_tokens" or "prepare_queue".
  void countRejected(const std::string& limit);
  // the sequences and prompt tokens admitted now.
  void setAdmitted(int64_t seqs, int64_t prompt_tokens);
  // a streaming client cut off for not reading (CallContext::max_stream_backlog_bytes).
  void countSlowClient() { slow_clients_->Increment(); }

  // the text exposition format (version 0.0.4).
  std::string render();

  prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::mutex load_mu_;
  std::function<generation::GeneratorLoad()> load_;  // guarded by load_mu_
  prometheus::Family<prometheus::Counter>* requests_;
  prometheus::Gauge* in_flight_;
  prometheus::Histogram* ttft_;
  prometheus::Histogram* itl_;
  prometheus::Histogram* e2e_;
  prometheus::Counter* prompt_tokens_;
  prometheus::Counter* generation_tokens_;
  prometheus::Counter* cached_tokens_;
  // the prompt-length mix: one series per range of each counter.
  struct MixRange {
    prometheus::Counter* requests;
    prometheus::Counter* prompt_tokens;
    prometheus::Counter* uncached_tokens;
    prometheus::Counter* output_tokens;
    prometheus::Counter* prompt_x_output;
  };
  std::array<MixRange, prompt_mix::kRanges> mix_;
  prometheus::Family<prometheus::Counter>* rejected_;
  prometheus::Gauge* admitted_seqs_;
  prometheus::Gauge* admitted_prompt_tokens_;
  prometheus::Counter* slow_clients_;
  prometheus::Gauge* running_;
  prometheus::Gauge* waiting_;
  prometheus::Gauge* kv_usage_;
  prometheus::Gauge* kv_blocks_;
};

}  // namespace tandem::router
