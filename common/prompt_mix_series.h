// The prompt-length mix as Prometheus series: what the router exports
// (router/metrics/serving_metrics.h) and the live planner reads
// (planner/load_sampler.h) into planner::PromptMix, in one place so the two
// cannot drift apart. Finished requests' prompts are binned by length into
// kRanges ranges: range k holds prompts of at most kEdges[k] tokens (and
// more than kEdges[k - 1]), the last one everything longer. Each of the five
// counters has one series per range, labelled range="<upper edge>"
// ("512", ..., "131072", "+Inf"): a fixed set of 13, nothing a client sends
// becomes a label.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <string>

namespace tandem::prompt_mix {

// the ranges' upper edges in tokens (inclusive), ascending.
inline constexpr std::array<double, 12> kEdges = {512,   1024,  2048,  4096,  8192,  16384,
                                                  32768, 49152, 65536, 81920, 98304, 131072};
inline constexpr size_t kRanges = kEdges.size() + 1;

// the label that names a series' range.
inline constexpr char kRangeLabel[] = "range";
// counters per range, of the requests that finished: how many, and the sums
// of their prompt tokens, of those not found in a prefix cache, of the tokens
// they generated and of prompt x generated (the KV a request holds, weighted
// by how long it decodes).
inline constexpr char kRequests[] = "tandem:prompt_mix_requests_total";
inline constexpr char kPromptTokens[] = "tandem:prompt_mix_prompt_tokens_total";
inline constexpr char kUncachedTokens[] = "tandem:prompt_mix_uncached_tokens_total";
inline constexpr char kOutputTokens[] = "tandem:prompt_mix_output_tokens_total";
inline constexpr char kPromptXOutput[] = "tandem:prompt_mix_prompt_x_output_total";

// the range of a prompt of `tokens`: the first whose upper edge is >= tokens.
inline size_t rangeOf(double tokens) {
  return static_cast<size_t>(std::lower_bound(kEdges.begin(), kEdges.end(), tokens) - kEdges.begin());
}

// the `range` label of range k (< kRanges): its upper edge, "+Inf" for the last.
inline std::string rangeLabel(size_t k) {
  return k < kEdges.size() ? std::to_string(static_cast<long long>(kEdges[k])) : "+Inf";
}

}  // namespace tandem::prompt_mix
