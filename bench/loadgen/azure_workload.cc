#include "bench/loadgen/azure_workload.h"

#include <algorithm>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/loadgen/token_synth.h"
#include "common/mapped_file.h"
#include "common/status.h"

namespace tandem::bench {
namespace {

// days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil).
int64_t daysFromCivil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

std::optional<double> parseTraceTimestamp(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  std::vector<absl::string_view> date_time = absl::StrSplit(text, absl::ByAnyChar(" T"));
  if (date_time.size() != 2) return std::nullopt;
  std::vector<absl::string_view> ymd = absl::StrSplit(date_time[0], '-');
  std::vector<absl::string_view> hms = absl::StrSplit(date_time[1], ':');
  if (ymd.size() != 3 || hms.size() != 3) return std::nullopt;
  int y, mo, d, h, mi;
  double s;
  if (!absl::SimpleAtoi(ymd[0], &y) || !absl::SimpleAtoi(ymd[1], &mo) || !absl::SimpleAtoi(ymd[2], &d) ||
      !absl::SimpleAtoi(hms[0], &h) || !absl::SimpleAtoi(hms[1], &mi) || !absl::SimpleAtod(hms[2], &s)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s >= 61) {
    return std::nullopt;
  }
  return static_cast<double>(daysFromCivil(y, mo, d)) * 86400.0 + h * 3600.0 + mi * 60.0 + s;
}

absl::StatusOr<std::vector<AzureRecord>> parseAzureTrace(const std::string& text, const std::string& name) {
  std::vector<AzureRecord> out;
  int col_time = -1, col_ctx = -1, col_gen = -1;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    std::vector<absl::string_view> cols = absl::StrSplit(line, ',');
    if (col_time < 0) {
      for (int i = 0; i < static_cast<int>(cols.size()); ++i) {
        std::string c = absl::AsciiStrToLower(absl::StripAsciiWhitespace(cols[i]));
        if (c == "timestamp") col_time = i;
        if (c == "contexttokens") col_ctx = i;
        if (c == "generatedtokens") col_gen = i;
      }
      if (col_time < 0 || col_ctx < 0 || col_gen < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(name, ":", line_no, ": expected a header TIMESTAMP,ContextTokens,GeneratedTokens"));
      }
      continue;
    }
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(name, ":", line_no, ": ", why));
    };
    int need = std::max({col_time, col_ctx, col_gen});
    if (static_cast<int>(cols.size()) <= need) return bad("too few columns");
    AzureRecord r;
    std::optional<double> t = parseTraceTimestamp(cols[col_time]);
    if (!t) return bad("cannot read the timestamp");
    r.time_s = *t;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(cols[col_ctx]), &r.context_tokens) ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(cols[col_gen]), &r.generated_tokens)) {
      return bad("token counts are not integers");
    }
    if (r.context_tokens < 1 || r.generated_tokens < 0) return bad("token counts out of range");
    out.push_back(r);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": no requests"));
  // arrivals are replayed in time order even if the file is not sorted.
  std::stable_sort(out.begin(), out.end(),
                   [](const AzureRecord& a, const AzureRecord& b) { return a.time_s < b.time_s; });
  return out;
}

absl::StatusOr<WorkloadPtr> AzureWorkload::create(const std::string& path, const WorkloadOptions& options,
                                                  const WorkloadContext& ctx) {
  ASSIGN_OR_RETURN(std::string text, readFile(path));
  ASSIGN_OR_RETURN(auto records, parseAzureTrace(text, path));
  return WorkloadPtr(new AzureWorkload(path, options, ctx, std::move(records)));
}

std::optional<BenchRequest> AzureWorkload::next() {
  if (next_ >= records_.size()) return std::nullopt;
  const AzureRecord& r = records_[next_];
  BenchRequest req;
  req.index = next_++;
  req.timestamp_s = r.time_s - records_.front().time_s;
  req.input_tokens = scaledLength(r.context_tokens, options_.length_scale, options_.max_input_len);
  req.max_tokens = scaledLength(r.generated_tokens, options_.length_scale, options_.max_output_len);
  // one stream per request: the same prompt on every run, whatever the order.
  std::mt19937_64 rng(splitmix64(options_.seed ^ (req.index + 1)));
  req.prompt_ids = ctx_.synth->randomTokens(rng, req.input_tokens);
  return req;
}

nlohmann::json AzureWorkload::describe() const {
  return {{"kind", "azure"},
          {"file", path_},
          {"records", records_.size()},
          {"length_scale", options_.length_scale},
          {"max_input_len", options_.max_input_len},
          {"max_output_len", options_.max_output_len}};
}

}  // namespace tandem::bench
