#include "bench/loadgen/mooncake_workload.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/loadgen/token_synth.h"
#include "common/mapped_file.h"
#include "common/status.h"

namespace tandem::bench {

absl::StatusOr<std::vector<MooncakeRecord>> parseMooncakeTrace(const std::string& text,
                                                                const std::string& name) {
  std::vector<MooncakeRecord> out;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(name, ":", line_no, ": ", why));
    };
    if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
    MooncakeRecord r;
    const auto ts = j.find("timestamp");
    const auto in = j.find("input_length");
    const auto outl = j.find("output_length");
    if (ts == j.end() || !ts->is_number()) return bad("no numeric 'timestamp'");
    if (in == j.end() || !in->is_number_integer()) return bad("no integer 'input_length'");
    if (outl == j.end() || !outl->is_number_integer()) return bad("no integer 'output_length'");
    r.timestamp_ms = ts->get<double>();
    r.input_length = in->get<int>();
    r.output_length = outl->get<int>();
    if (r.input_length < 1 || r.output_length < 0) return bad("lengths out of range");
    if (auto h = j.find("hash_ids"); h != j.end()) {
      if (!h->is_array()) return bad("'hash_ids' is not an array");
      for (const auto& id : *h) {
        if (!id.is_number_integer()) return bad("a hash id is not an integer");
        r.hash_ids.push_back(id.get<uint64_t>());
      }
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": no requests"));
  return out;
}

absl::StatusOr<WorkloadPtr> MooncakeWorkload::create(const std::string& path,
                                                     const WorkloadOptions& options,
                                                     const WorkloadContext& ctx) {
  if (options.trace_block_tokens < 1) return absl::InvalidArgumentError("--trace-block-tokens must be >= 1");
  ASSIGN_OR_RETURN(std::string text, readFile(path));
  ASSIGN_OR_RETURN(auto records, parseMooncakeTrace(text, path));
  return WorkloadPtr(new MooncakeWorkload(path, options, ctx, std::move(records)));
}

MooncakeWorkload::MooncakeWorkload(std::string path, const WorkloadOptions& options,
                                   const WorkloadContext& ctx, std::vector<MooncakeRecord> records)
    : path_(std::move(path)), options_(options), ctx_(ctx), records_(std::move(records)) {
  block_tokens_ = scaledLength(options_.trace_block_tokens, options_.length_scale, 0);
}

std::optional<BenchRequest> MooncakeWorkload::next() {
  if (next_ >= records_.size()) return std::nullopt;
  const MooncakeRecord& r = records_[next_];
  BenchRequest req;
  req.index = next_++;
  req.timestamp_s = (r.timestamp_ms - records_.front().timestamp_ms) / 1000.0;
  int in = scaledLength(r.input_length, options_.length_scale, options_.max_input_len);
  req.input_tokens = in;
  req.max_tokens = scaledLength(r.output_length, options_.length_scale, options_.max_output_len);
  req.prompt_ids.reserve(in);
  for (uint64_t h : r.hash_ids) {
    if (static_cast<int>(req.prompt_ids.size()) >= in) break;
    std::vector<int32_t> block = ctx_.synth->blockTokens(h, block_tokens_);
    req.prompt_ids.insert(req.prompt_ids.end(), block.begin(), block.end());
  }
  // a trace whose hash ids cover less than input_length: the rest is
  // private to this request (a block named after its line, out of the
  // trace's hash range).
  for (uint64_t k = 0; static_cast<int>(req.prompt_ids.size()) < in; ++k) {
    std::vector<int32_t> block = ctx_.synth->blockTokens(~(req.index * 1024 + k), block_tokens_);
    req.prompt_ids.insert(req.prompt_ids.end(), block.begin(), block.end());
  }
  req.prompt_ids.resize(in);
  return req;
}

nlohmann::json MooncakeWorkload::describe() const {
  return {{"kind", "mooncake"},
          {"file", path_},
          {"records", records_.size()},
          {"length_scale", options_.length_scale},
          {"block_tokens", block_tokens_},
          {"max_input_len", options_.max_input_len},
          {"max_output_len", options_.max_output_len}};
}

}  // namespace tandem::bench
