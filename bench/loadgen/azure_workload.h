// Azure LLM inference traces (Splitwise, 2023): CSV with a header
//   TIMESTAMP,ContextTokens,GeneratedTokens
//   2023-11-16 18:15:46.6805900,374,44
// Arrivals come from the timestamps; prompts are random token ids of the
// context length (the trace records no content, so no prefix sharing).
#pragma once

#include <vector>

#include "bench/loadgen/workload.h"

namespace tandem::bench {

struct AzureRecord {
  double time_s = 0;  // seconds since 1970 (UTC, as written)
  int context_tokens = 0;
  int generated_tokens = 0;
};

// parses "YYYY-MM-DD HH:MM:SS[.fraction]" to seconds since 1970.
std::optional<double> parseTraceTimestamp(absl::string_view text);

// parses the CSV; columns are found by header name, so their order may
// vary. Fails naming the first malformed line.
absl::StatusOr<std::vector<AzureRecord>> parseAzureTrace(const std::string& text, const std::string& name);

class AzureWorkload : public Workload {
 public:
  static absl::StatusOr<WorkloadPtr> create(const std::string& path, const WorkloadOptions& options,
                                            const WorkloadContext& ctx);

  // Workload
  std::optional<BenchRequest> next() override;
  nlohmann::json describe() const override;
  bool hasTimestamps() const override { return true; }

 private:
  AzureWorkload(std::string path, const WorkloadOptions& options, const WorkloadContext& ctx,
                std::vector<AzureRecord> records)
      : path_(std::move(path)), options_(options), ctx_(ctx), records_(std::move(records)) {}

  std::string path_;
  WorkloadOptions options_;
  WorkloadContext ctx_;
  std::vector<AzureRecord> records_;
  size_t next_ = 0;
};

}  // namespace tandem::bench
