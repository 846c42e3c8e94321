// Mooncake JSONL traces (Kimi production, FAST'25): one request a line,
//   {"timestamp": ms, "input_length": n, "output_length": m, "hash_ids": [..]}
// where each hash id names one block of trace_block_tokens (512) prompt
// tokens; requests sharing leading hash ids share that prefix. Each hash id
// expands to a deterministic block of token ids (TokenSynth::blockTokens),
// so the prefix sharing reaches the server's cache as recorded.
#pragma once

#include <vector>

#include "bench/loadgen/workload.h"

namespace tandem::bench {

struct MooncakeRecord {
  double timestamp_ms = 0;
  int input_length = 0;
  int output_length = 0;
  std::vector<uint64_t> hash_ids;
};

// parses the trace text; fails naming the first malformed line.
absl::StatusOr<std::vector<MooncakeRecord>> parseMooncakeTrace(const std::string& text,
                                                                const std::string& name);

class MooncakeWorkload : public Workload {
 public:
  static absl::StatusOr<WorkloadPtr> create(const std::string& path, const WorkloadOptions& options,
                                            const WorkloadContext& ctx);

  // Workload
  std::optional<BenchRequest> next() override;
  nlohmann::json describe() const override;
  bool hasTimestamps() const override { return true; }

 private:
  MooncakeWorkload(std::string path, const WorkloadOptions& options, const WorkloadContext& ctx,
                   std::vector<MooncakeRecord> records);

  std::string path_;
  WorkloadOptions options_;
  WorkloadContext ctx_;
  std::vector<MooncakeRecord> records_;
  int block_tokens_;  // after scaling
  size_t next_ = 0;
};

}  // namespace tandem::bench
