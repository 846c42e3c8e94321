// A trace for the router simulator: requests with their arrival, prompt
// length, output length and the prompt's chained block hashes at the
// simulated block size. Read with the load generator's own parsers
// (bench/loadgen mooncake_workload.h, azure_workload.h):
//   mooncake:FILE  each hash id names 512 prompt tokens; it expands to
//                  512 / block_size consecutive sub-blocks (hashed in chain
//                  after their parent), so prefix sharing is exact;
//   azure:FILE     rows carry no content: every prompt is unique.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kvcache/prefix_hash.h"

namespace tandem::bench {

struct SimRequest {
  double arrival_s = 0;  // from the trace's first request
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 1;
  std::vector<kvcache::BlockHash> hashes;  // full blocks only
};

struct SimTrace {
  std::string name;  // as given: "mooncake:FILE"
  std::vector<SimRequest> requests;
  // distinct block hashes over all requests.
  int64_t distinct_blocks = 0;
};

// reads "mooncake:FILE" or "azure:FILE" at `block_size` tokens a block.
absl::StatusOr<SimTrace> loadSimTrace(const std::string& spec, int block_size);

}  // namespace tandem::bench
