// ShareGPT-format conversations (the JSON vLLM's and SGLang's benchmarks
// read): an array of {"conversations": [{"from": "human", "value": ...},
// {"from": "gpt", "value": ...}, ...]} (also "role"/"content" keys). Each
// conversation gives one request: its first human message is the prompt,
// and the length of the reply that follows (in tokens of the benchmark's
// tokenizer) is the output length asked for.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "bench/loadgen/workload.h"

namespace tandem::bench {

struct ShareGptPair {
  std::string prompt;
  std::string reply;
};

// the (first human message, reply) of every conversation with both; fails
// when the text is not a JSON array of conversations.
absl::StatusOr<std::vector<ShareGptPair>> parseShareGpt(const std::string& text, const std::string& name);

class ShareGptWorkload : public Workload {
 public:
  // needs ctx.tokenizer to count tokens.
  static absl::StatusOr<WorkloadPtr> create(const std::string& path, const WorkloadOptions& options,
                                            const WorkloadContext& ctx);

  // Workload; conversations whose prompt is longer than --max-input-len
  // are skipped (cutting text mid-sentence would not be ShareGPT anymore).
  std::optional<BenchRequest> next() override;
  nlohmann::json describe() const override;

 private:
  ShareGptWorkload(std::string path, const WorkloadOptions& options, const WorkloadContext& ctx,
                   std::vector<ShareGptPair> pairs)
      : path_(std::move(path)), options_(options), ctx_(ctx), pairs_(std::move(pairs)) {}

  std::string path_;
  WorkloadOptions options_;
  WorkloadContext ctx_;
  std::vector<ShareGptPair> pairs_;
  size_t next_pair_ = 0;
  uint64_t index_ = 0;
};

}  // namespace tandem::bench
