#include "bench/planner_sim/trace_formats.h"

#include <algorithm>
#include <array>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/loadgen/azure_workload.h"
#include "bench/planner_sim/synthetic_trace.h"
#include "common/mapped_file.h"

namespace tandem::bench {
namespace {

// the columns a format needs, by header name (lower case): time, prompt, output.
struct Columns {
  std::array<const char*, 3> names;
};

Columns columnsOf(TokenTraceFormat format) {
  if (format == TokenTraceFormat::kAzure2024) return {{"timestamp", "contexttokens", "generatedtokens"}};
  return {{"timestamp", "request tokens", "response tokens"}};
}

// "2024-05-10 00:00:00.0000000", with an optional "Z" or "+HH:MM" / "-HH:MM"
// offset, to seconds since 1970 (UTC).
std::optional<double> azureTime(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  double offset_s = 0;
  if (absl::ConsumeSuffix(&text, "Z")) {
  } else if (text.size() > 6 && (text[text.size() - 6] == '+' || text[text.size() - 6] == '-') &&
             text[text.size() - 3] == ':') {
    int hh = 0, mm = 0;
    if (!absl::SimpleAtoi(text.substr(text.size() - 5, 2), &hh) || !absl::SimpleAtoi(text.substr(text.size() - 2), &mm)) {
      return std::nullopt;
    }
    offset_s = (text[text.size() - 6] == '+' ? 1 : -1) * (hh * 3600.0 + mm * 60.0);
    text.remove_suffix(6);
  }
  std::optional<double> t = parseTraceTimestamp(text);
  if (!t) return std::nullopt;
  return *t - offset_s;
}

}  // namespace

std::vector<kvcache::BlockHash> uniquePromptBlocks(uint64_t id, int64_t tokens, int block_size) {
  std::vector<kvcache::BlockHash> out;
  kvcache::BlockHash parent = kvcache::kRootParentHash;
  for (int64_t b = 0; b < tokens / block_size; ++b) {
    // the id in the top bits keeps these apart from the other loaders' chains.
    const int32_t block[3] = {static_cast<int32_t>(id & 0xffffffffu), static_cast<int32_t>((id >> 32) | 0x40000000u),
                              static_cast<int32_t>(b)};
    parent = kvcache::hashBlock(parent, block);
    out.push_back(parent);
  }
  return out;
}

absl::StatusOr<SimTrace> parseTokenTrace(std::string_view text, TokenTraceFormat format, const std::string& name,
                                         int block_size) {
  if (block_size <= 0) return absl::InvalidArgumentError("the block size must be positive");
  const Columns want = columnsOf(format);
  std::array<int, 3> col = {-1, -1, -1};
  SimTrace trace;
  trace.name = name;
  int64_t line_no = 0, skipped = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    const std::vector<absl::string_view> cells = absl::StrSplit(line, ',');
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(name, ":", line_no, ": ", why));
    };
    if (col[0] < 0) {
      for (int i = 0; i < static_cast<int>(cells.size()); ++i) {
        const std::string cell = absl::AsciiStrToLower(absl::StripAsciiWhitespace(cells[i]));
        for (int c = 0; c < 3; ++c) {
          if (cell == want.names[c]) col[c] = i;
        }
      }
      if (*std::min_element(col.begin(), col.end()) < 0) {
        return bad(format == TokenTraceFormat::kAzure2024
                       ? "expected a header TIMESTAMP,ContextTokens,GeneratedTokens"
                       : "expected a header Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type");
      }
      continue;
    }
    if (static_cast<int>(cells.size()) <= *std::max_element(col.begin(), col.end())) return bad("too few columns");
    std::optional<double> time;
    if (format == TokenTraceFormat::kAzure2024) {
      time = azureTime(cells[col[0]]);
    } else if (double seconds = 0; absl::SimpleAtod(absl::StripAsciiWhitespace(cells[col[0]]), &seconds) &&
                                   seconds >= 0 && seconds < 1e12) {
      time = seconds;
    }
    if (!time) return bad("cannot read the timestamp");
    int64_t prompt = 0, output = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(cells[col[1]]), &prompt) ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(cells[col[2]]), &output)) {
      return bad("token counts are not integers");
    }
    if (prompt < 0 || output < 0 || prompt > (int64_t{1} << 30) || output > (int64_t{1} << 30)) {
      return bad("token counts out of range");
    }
    // BurstGPT logs a failed request with no response: nothing was served.
    if (format == TokenTraceFormat::kBurstGpt && output == 0) {
      ++skipped;
      continue;
    }
    SimRequest r;
    r.arrival_s = *time;
    r.prompt_tokens = std::max<int64_t>(1, prompt);
    r.output_tokens = std::max<int64_t>(1, output);
    trace.requests.push_back(std::move(r));
  }
  if (col[0] < 0) return absl::InvalidArgumentError(absl::StrCat(name, ": empty, no header"));
  if (trace.requests.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no requests (", skipped, " failed ones skipped)"));
  }
  std::stable_sort(trace.requests.begin(), trace.requests.end(),
                   [](const SimRequest& a, const SimRequest& b) { return a.arrival_s < b.arrival_s; });
  const double t0 = trace.requests.front().arrival_s;
  uint64_t id = 0;
  for (SimRequest& r : trace.requests) {
    r.arrival_s -= t0;
    r.hashes = uniquePromptBlocks(id++, r.prompt_tokens, block_size);
    trace.distinct_blocks += static_cast<int64_t>(r.hashes.size());
  }
  return trace;
}

absl::StatusOr<SimTrace> loadPlannerTrace(const std::string& spec, int block_size, uint64_t seed) {
  const size_t colon = spec.find(':');
  const std::string kind = colon == std::string::npos ? spec : spec.substr(0, colon);
  const std::string rest = colon == std::string::npos ? "" : spec.substr(colon + 1);
  if (kind == "mooncake" || kind == "azure") return loadSimTrace(spec, block_size);
  if (kind == "synthetic") {
    absl::StatusOr<SyntheticTraceOptions> options = parseSyntheticSpec(rest);
    if (!options.ok()) return options.status();
    options->seed = seed;
    return syntheticTrace(*options, block_size);
  }
  if (kind != "azure2024" && kind != "burstgpt") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--trace wants mooncake:FILE, azure:FILE, azure2024:FILE, burstgpt:FILE or synthetic:KIND, not '", spec, "'"));
  }
  absl::StatusOr<MappedFilePtr> file = MappedFile::open(rest);
  if (!file.ok()) return file.status();
  absl::StatusOr<SimTrace> trace = parseTokenTrace(
      (*file)->view(), kind == "azure2024" ? TokenTraceFormat::kAzure2024 : TokenTraceFormat::kBurstGpt, rest, block_size);
  if (trace.ok()) trace->name = spec;
  return trace;
}

SimTrace windowTrace(const SimTrace& trace, double start_s, double length_s) {
  SimTrace out;
  out.name = trace.name;
  const double end = length_s > 0 ? start_s + length_s : 1e300;
  absl::flat_hash_set<kvcache::BlockHash> distinct;
  for (const SimRequest& r : trace.requests) {
    if (r.arrival_s < start_s || r.arrival_s >= end) continue;
    out.requests.push_back(r);
    out.requests.back().arrival_s -= start_s;
    distinct.insert(r.hashes.begin(), r.hashes.end());
  }
  out.distinct_blocks = static_cast<int64_t>(distinct.size());
  return out;
}

}  // namespace tandem::bench
