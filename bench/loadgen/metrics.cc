#include "bench/loadgen/metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tandem::bench {

namespace {
double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }
}  // namespace

RequestRecord makeRecord(const BenchRequest& req, const StreamResult& res, Clock::time_point run_start) {
  RequestRecord r;
  r.index = req.index;
  r.ok = res.ok;
  r.error_kind = res.error_kind;
  r.start_s = std::chrono::duration<double>(res.start - run_start).count();
  r.e2e_ms = ms(res.end - res.start);
  r.input_tokens = res.prompt_tokens >= 0 ? res.prompt_tokens : req.input_tokens;
  r.cached_tokens = res.cached_tokens;
  if (!res.token_times.empty()) {
    r.ttft_ms = ms(res.token_times.front() - res.start);
    r.itl_ms.reserve(res.token_times.size() - 1);
    for (size_t i = 1; i < res.token_times.size(); ++i) {
      r.itl_ms.push_back(ms(res.token_times[i] - res.token_times[i - 1]));
    }
  }
  r.output_tokens = res.completion_tokens >= 0 ? res.completion_tokens : static_cast<int>(res.token_times.size());
  if (r.ok && r.output_tokens > 1) r.tpot_ms = (r.e2e_ms - r.ttft_ms) / (r.output_tokens - 1);
  return r;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Distribution distributionOf(std::vector<double> values) {
  Distribution d;
  d.count = values.size();
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  d.p50 = percentile(values, 50);
  d.p90 = percentile(values, 90);
  d.p99 = percentile(values, 99);
  d.max = values.back();
  return d;
}

absl::StatusOr<Slo> parseSlo(const std::string& text) {
  Slo slo;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::vector<absl::string_view> kv = absl::StrSplit(part, absl::MaxSplits('=', 1));
    double v;
    if (kv.size() != 2 || !absl::SimpleAtod(absl::StripAsciiWhitespace(kv[1]), &v) || !(v > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("--slo: '", part, "' is not NAME=MS with MS > 0"));
    }
    absl::string_view name = absl::StripAsciiWhitespace(kv[0]);
    if (name == "ttft") {
      slo.ttft_ms = v;
    } else if (name == "tpot") {
      slo.tpot_ms = v;
    } else if (name == "e2e" || name == "e2el") {
      slo.e2e_ms = v;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("--slo: unknown metric '", name, "' (ttft, tpot, e2e)"));
    }
  }
  if (!slo.any()) return absl::InvalidArgumentError("--slo: give at least one of ttft=MS, tpot=MS, e2e=MS");
  return slo;
}

bool meetsSlo(const RequestRecord& r, const Slo& slo) {
  if (!r.ok) return false;
  if (slo.ttft_ms && r.ttft_ms > *slo.ttft_ms) return false;
  // a one-token answer has no TPOT and cannot miss its target.
  if (slo.tpot_ms && r.tpot_ms && *r.tpot_ms > *slo.tpot_ms) return false;
  if (slo.e2e_ms && r.e2e_ms > *slo.e2e_ms) return false;
  return true;
}

Summary summarize(const std::vector<RequestRecord>& records, double duration_s, const Slo& slo) {
  Summary s;
  s.duration_s = duration_s;
  std::vector<double> ttft, itl, tpot, e2e;
  int64_t cached = 0, cached_of = 0;
  bool any_cached = false;
  // (time, +1/-1) to find the peak number in flight.
  std::vector<std::pair<double, int>> edges;
  for (const RequestRecord& r : records) {
    edges.emplace_back(r.start_s, 1);
    edges.emplace_back(r.start_s + r.e2e_ms / 1000.0, -1);
    if (!r.ok) {
      ++s.failed;
      ++s.errors[r.error_kind.empty() ? "unknown" : r.error_kind];
      continue;
    }
    ++s.completed;
    ttft.push_back(r.ttft_ms);
    e2e.push_back(r.e2e_ms);
    if (r.tpot_ms) tpot.push_back(*r.tpot_ms);
    itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
    s.total_input_tokens += r.input_tokens;
    s.total_output_tokens += r.output_tokens;
    if (r.cached_tokens >= 0) {
      any_cached = true;
      cached += r.cached_tokens;
      cached_of += r.input_tokens;
    }
    // with no SLO every successful request is good (vLLM's goodput).
    if (meetsSlo(r, slo)) ++s.good_requests;
  }
  s.ttft_ms = distributionOf(std::move(ttft));
  s.itl_ms = distributionOf(std::move(itl));
  s.tpot_ms = distributionOf(std::move(tpot));
  s.e2e_ms = distributionOf(std::move(e2e));
  if (duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / duration_s;
    s.input_throughput = static_cast<double>(s.total_input_tokens) / duration_s;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / duration_s;
    s.goodput = static_cast<double>(s.good_requests) / duration_s;
  }
  if (any_cached && cached_of > 0) s.cached_token_ratio = static_cast<double>(cached) / static_cast<double>(cached_of);
  // ends sort before starts at the same instant: back-to-back is not overlap.
  std::sort(edges.begin(), edges.end());
  int in_flight = 0;
  for (const auto& e : edges) {
    in_flight += e.second;
    s.max_concurrency = std::max<double>(s.max_concurrency, in_flight);
  }
  return s;
}

}  // namespace tandem::bench
