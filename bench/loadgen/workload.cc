#include "bench/loadgen/workload.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "bench/loadgen/azure_workload.h"
#include "bench/loadgen/mooncake_workload.h"
#include "bench/loadgen/multiturn_workload.h"
#include "bench/loadgen/random_workload.h"
#include "bench/loadgen/sharegpt_workload.h"

namespace tandem::bench {

int scaledLength(int length, double scale, int cap) {
  int n = static_cast<int>(std::lround(length * scale));
  if (cap > 0) n = std::min(n, cap);
  return std::max(n, 1);
}

absl::StatusOr<WorkloadPtr> createWorkload(const std::string& spec, const WorkloadOptions& options,
                                           const WorkloadContext& ctx) {
  if (ctx.synth == nullptr) return absl::InvalidArgumentError("workload: no token synth");
  if (!(options.length_scale > 0)) return absl::InvalidArgumentError("--length-scale must be > 0");
  std::string kind = spec;
  std::string path;
  if (size_t colon = spec.find(':'); colon != std::string::npos) {
    kind = spec.substr(0, colon);
    path = spec.substr(colon + 1);
    if (path.empty()) return absl::InvalidArgumentError(absl::StrCat("--workload ", spec, ": no file"));
  }
  if (kind == "random" && path.empty()) return RandomWorkload::create(options, ctx);
  if (kind == "multiturn" && path.empty()) return MultiTurnWorkload::create(options, ctx);
  if (kind == "sharegpt" && !path.empty()) return ShareGptWorkload::create(path, options, ctx);
  if (kind == "mooncake" && !path.empty()) return MooncakeWorkload::create(path, options, ctx);
  if (kind == "azure" && !path.empty()) return AzureWorkload::create(path, options, ctx);
  return absl::InvalidArgumentError(absl::StrCat(
      "--workload '", spec, "': expected random, multiturn, sharegpt:FILE, mooncake:FILE or azure:FILE"));
}

}  // namespace tandem::bench
