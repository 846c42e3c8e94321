#include "bench/loadgen/random_workload.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/loadgen/token_synth.h"
#include "common/mapped_file.h"
#include "common/status.h"

namespace tandem::bench {

absl::StatusOr<std::vector<std::pair<int, int>>> readLengthsFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, readFile(path));
  std::vector<std::pair<int, int>> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> cols = absl::StrSplit(line, ',');
    int in = 0, out_len = 0;
    bool ok = cols.size() == 2 && absl::SimpleAtoi(absl::StripAsciiWhitespace(cols[0]), &in) &&
              absl::SimpleAtoi(absl::StripAsciiWhitespace(cols[1]), &out_len);
    if (!ok) {
      if (line_no == 1) continue;  // a header
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": expected 'input,output'"));
    }
    if (in < 1 || out_len < 1) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_no, ": lengths must be >= 1"));
    }
    out.emplace_back(in, out_len);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no lengths"));
  return out;
}

absl::StatusOr<WorkloadPtr> RandomWorkload::create(const WorkloadOptions& options,
                                                   const WorkloadContext& ctx) {
  if (options.input_len < 1 || options.output_len < 1) {
    return absl::InvalidArgumentError("--input-len and --output-len must be >= 1");
  }
  if (options.range_ratio < 0 || options.range_ratio >= 1) {
    return absl::InvalidArgumentError("--range-ratio must be in [0, 1)");
  }
  std::vector<std::pair<int, int>> lengths;
  if (!options.lengths_file.empty()) {
    ASSIGN_OR_RETURN(lengths, readLengthsFile(options.lengths_file));
  }
  return WorkloadPtr(new RandomWorkload(options, ctx, std::move(lengths)));
}

int RandomWorkload::draw(int len) {
  if (options_.range_ratio == 0) return len;
  int lo = std::max(1, static_cast<int>(std::floor(len * (1 - options_.range_ratio))));
  int hi = std::max(lo, static_cast<int>(std::ceil(len * (1 + options_.range_ratio))));
  return std::uniform_int_distribution<int>(lo, hi)(rng_);
}

std::optional<BenchRequest> RandomWorkload::next() {
  BenchRequest req;
  req.index = index_;
  int in, out;
  if (!lengths_.empty()) {
    const auto& pair = lengths_[index_ % lengths_.size()];
    in = scaledLength(pair.first, options_.length_scale, options_.max_input_len);
    out = scaledLength(pair.second, options_.length_scale, options_.max_output_len);
  } else {
    in = draw(options_.input_len);
    out = draw(options_.output_len);
  }
  ++index_;
  req.prompt_ids = ctx_.synth->randomTokens(rng_, in);
  req.input_tokens = in;
  req.max_tokens = out;
  return req;
}

nlohmann::json RandomWorkload::describe() const {
  nlohmann::json j = {{"kind", "random"}, {"seed", options_.seed}};
  if (!options_.lengths_file.empty()) {
    j["lengths_file"] = options_.lengths_file;
    j["length_scale"] = options_.length_scale;
  } else {
    j["input_len"] = options_.input_len;
    j["output_len"] = options_.output_len;
    j["range_ratio"] = options_.range_ratio;
  }
  return j;
}

}  // namespace tandem::bench
