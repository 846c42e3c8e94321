// Random prompts of random token ids: lengths fixed (--input-len,
// --output-len), spread uniformly by --range-ratio, or cycled from a CSV
// of "input,output" pairs (--lengths-file). Endless; the runner stops it.
#pragma once

#include <random>
#include <utility>
#include <vector>

#include "bench/loadgen/workload.h"

namespace tandem::bench {

class RandomWorkload : public Workload {
 public:
  static absl::StatusOr<WorkloadPtr> create(const WorkloadOptions& options, const WorkloadContext& ctx);

  // Workload
  std::optional<BenchRequest> next() override;
  nlohmann::json describe() const override;
  bool endless() const override { return true; }

 private:
  RandomWorkload(const WorkloadOptions& options, const WorkloadContext& ctx,
                 std::vector<std::pair<int, int>> lengths)
      : options_(options), ctx_(ctx), lengths_(std::move(lengths)), rng_(options.seed) {}
  int draw(int len);

  WorkloadOptions options_;
  WorkloadContext ctx_;
  std::vector<std::pair<int, int>> lengths_;  // from --lengths-file, else empty
  std::mt19937_64 rng_;
  uint64_t index_ = 0;
};

// reads "input,output" pairs, one a line; a header line and blank lines are
// skipped. Fails naming the line that does not parse.
absl::StatusOr<std::vector<std::pair<int, int>>> readLengthsFile(const std::string& path);

}  // namespace tandem::bench
