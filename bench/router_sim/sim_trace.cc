#include "bench/router_sim/sim_trace.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "bench/loadgen/azure_workload.h"
#include "bench/loadgen/mooncake_workload.h"
#include "common/mapped_file.h"

namespace tandem::bench {
namespace {

constexpr int kMooncakeBlockTokens = 512;

// the hash of sub-block `j` of trace block `id` after `parent`.
kvcache::BlockHash subBlockHash(kvcache::BlockHash parent, uint64_t id, int j) {
  const int32_t tokens[3] = {static_cast<int32_t>(id & 0xffffffffu), static_cast<int32_t>(id >> 32), j};
  return kvcache::hashBlock(parent, tokens);
}

}  // namespace

absl::StatusOr<SimTrace> loadSimTrace(const std::string& spec, int block_size) {
  if (block_size <= 0) return absl::InvalidArgumentError("the block size must be positive");
  const size_t colon = spec.find(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--trace wants mooncake:FILE or azure:FILE, not '", spec, "'"));
  }
  const std::string kind = spec.substr(0, colon);
  const std::string path = spec.substr(colon + 1);
  absl::StatusOr<std::string> text = readFile(path);
  if (!text.ok()) return text.status();
  SimTrace trace;
  trace.name = spec;
  if (kind == "mooncake") {
    absl::StatusOr<std::vector<MooncakeRecord>> records = parseMooncakeTrace(*text, path);
    if (!records.ok()) return records.status();
    const int per = std::max(1, kMooncakeBlockTokens / block_size);
    const double t0 = records->empty() ? 0 : records->front().timestamp_ms;
    for (const MooncakeRecord& r : *records) {
      SimRequest q;
      q.arrival_s = (r.timestamp_ms - t0) / 1000;
      q.prompt_tokens = std::max(1, r.input_length);
      q.output_tokens = std::max(1, r.output_length);
      const int64_t full = std::min<int64_t>(q.prompt_tokens / block_size,
                                             static_cast<int64_t>(r.hash_ids.size()) * per);
      q.hashes.reserve(full);
      kvcache::BlockHash parent = kvcache::kRootParentHash;
      for (int64_t b = 0; b < full; ++b) {
        parent = subBlockHash(parent, r.hash_ids[b / per], static_cast<int>(b % per));
        q.hashes.push_back(parent);
      }
      trace.requests.push_back(std::move(q));
    }
  } else if (kind == "azure") {
    absl::StatusOr<std::vector<AzureRecord>> records = parseAzureTrace(*text, path);
    if (!records.ok()) return records.status();
    const double t0 = records->empty() ? 0 : records->front().time_s;
    uint64_t n = 0;
    for (const AzureRecord& r : *records) {
      SimRequest q;
      q.arrival_s = r.time_s - t0;
      q.prompt_tokens = std::max(1, r.context_tokens);
      q.output_tokens = std::max(1, r.generated_tokens);
      // no content: a chain of its own per request.
      kvcache::BlockHash parent = kvcache::kRootParentHash;
      const uint64_t id = (uint64_t{1} << 62) + n++;
      for (int64_t b = 0; b < q.prompt_tokens / block_size; ++b) {
        parent = subBlockHash(parent, id, static_cast<int>(b));
        q.hashes.push_back(parent);
      }
      trace.requests.push_back(std::move(q));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown trace kind '", kind, "' (mooncake:FILE or azure:FILE)"));
  }
  std::stable_sort(trace.requests.begin(), trace.requests.end(),
                   [](const SimRequest& a, const SimRequest& b) { return a.arrival_s < b.arrival_s; });
  absl::flat_hash_set<kvcache::BlockHash> distinct;
  for (const SimRequest& q : trace.requests) distinct.insert(q.hashes.begin(), q.hashes.end());
  trace.distinct_blocks = static_cast<int64_t>(distinct.size());
  return trace;
}

}  // namespace tandem::bench
