#include "bench/loadgen/report.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::bench {

using nlohmann::json;

json distributionJson(const Distribution& d) {
  return {{"mean", d.mean}, {"p50", d.p50}, {"p90", d.p90}, {"p99", d.p99}, {"max", d.max}, {"count", d.count}};
}

json runJson(const RunResult& run, const Slo& slo, bool with_requests) {
  const Summary& s = run.summary;
  json j;
  j["label"] = run.label;
  j["rate"] = run.rate ? json(*run.rate) : json(nullptr);
  j["arrival"] = run.arrival;
  j["workload"] = run.workload;
  j["completed"] = s.completed;
  j["failed"] = s.failed;
  j["duration_s"] = s.duration_s;
  j["ttft_ms"] = distributionJson(s.ttft_ms);
  j["itl_ms"] = distributionJson(s.itl_ms);
  j["tpot_ms"] = distributionJson(s.tpot_ms);
  j["e2e_ms"] = distributionJson(s.e2e_ms);
  j["request_throughput"] = s.request_throughput;
  j["input_throughput"] = s.input_throughput;
  j["output_throughput"] = s.output_throughput;
  j["goodput"] = s.goodput ? json(*s.goodput) : json(nullptr);
  json slo_json = json::object();
  if (slo.ttft_ms) slo_json["ttft_ms"] = *slo.ttft_ms;
  if (slo.tpot_ms) slo_json["tpot_ms"] = *slo.tpot_ms;
  if (slo.e2e_ms) slo_json["e2e_ms"] = *slo.e2e_ms;
  j["slo"] = slo_json;
  j["good_requests"] = s.good_requests;
  j["errors"] = json(s.errors);
  j["cached_token_ratio"] = s.cached_token_ratio ? json(*s.cached_token_ratio) : json(nullptr);
  j["total_input_tokens"] = s.total_input_tokens;
  j["total_output_tokens"] = s.total_output_tokens;
  j["max_concurrency"] = s.max_concurrency;
  if (with_requests) {
    json reqs = json::array();
    for (const RequestRecord& r : run.records) {
      json x = {{"index", r.index},         {"ok", r.ok},
                {"start_s", r.start_s},     {"ttft_ms", r.ttft_ms},
                {"e2e_ms", r.e2e_ms},       {"input_tokens", r.input_tokens},
                {"output_tokens", r.output_tokens}, {"itl_ms", r.itl_ms}};
      if (r.tpot_ms) x["tpot_ms"] = *r.tpot_ms;
      if (r.cached_tokens >= 0) x["cached_tokens"] = r.cached_tokens;
      if (!r.ok) x["error"] = r.error_kind;
      reqs.push_back(std::move(x));
    }
    j["requests"] = std::move(reqs);
  }
  return j;
}

namespace {

std::string distRow(const char* name, const Distribution& d) {
  return absl::StrFormat("  %-10s %10.2f %10.2f %10.2f %10.2f %10.2f\n", name, d.mean, d.p50, d.p90, d.p99, d.max);
}

}  // namespace

std::string summaryTable(const RunResult& run, const Slo& slo) {
  const Summary& s = run.summary;
  std::string out = absl::StrFormat("============ tandem bench: %s ============\n", run.label);
  absl::StrAppendFormat(&out, "  %-28s %s\n", "arrivals", run.arrival);
  absl::StrAppendFormat(&out, "  %-28s %s\n", "workload", run.workload.value("kind", std::string("?")));
  absl::StrAppendFormat(&out, "  %-28s %zu\n", "completed requests", s.completed);
  absl::StrAppendFormat(&out, "  %-28s %zu\n", "failed requests", s.failed);
  for (const auto& [kind, n] : s.errors) absl::StrAppendFormat(&out, "    %-26s %zu\n", kind, n);
  absl::StrAppendFormat(&out, "  %-28s %.2f\n", "duration (s)", s.duration_s);
  absl::StrAppendFormat(&out, "  %-28s %.0f\n", "peak concurrency", s.max_concurrency);
  absl::StrAppendFormat(&out, "  %-28s %lld / %lld\n", "input / output tokens",
                        static_cast<long long>(s.total_input_tokens), static_cast<long long>(s.total_output_tokens));
  absl::StrAppendFormat(&out, "  %-28s %.3f\n", "request throughput (req/s)", s.request_throughput);
  absl::StrAppendFormat(&out, "  %-28s %.1f\n", "input throughput (tok/s)", s.input_throughput);
  absl::StrAppendFormat(&out, "  %-28s %.1f\n", "output throughput (tok/s)", s.output_throughput);
  if (s.goodput) {
    std::string what;
    if (slo.ttft_ms) absl::StrAppendFormat(&what, " ttft<=%gms", *slo.ttft_ms);
    if (slo.tpot_ms) absl::StrAppendFormat(&what, " tpot<=%gms", *slo.tpot_ms);
    if (slo.e2e_ms) absl::StrAppendFormat(&what, " e2e<=%gms", *slo.e2e_ms);
    absl::StrAppendFormat(&out, "  %-28s %.3f (%zu of %zu %s)\n", "goodput (req/s)", *s.goodput,
                          s.good_requests, s.completed + s.failed,
                          slo.any() ? "within" + what : std::string("succeeded, no --slo"));
  }
  if (s.cached_token_ratio) {
    absl::StrAppendFormat(&out, "  %-28s %.3f\n", "cached token ratio", *s.cached_token_ratio);
  } else {
    absl::StrAppendFormat(&out, "  %-28s %s\n", "cached token ratio", "(not reported by the server)");
  }
  absl::StrAppendFormat(&out, "  %-10s %10s %10s %10s %10s %10s\n", "(ms)", "mean", "p50", "p90", "p99", "max");
  out += distRow("TTFT", s.ttft_ms);
  out += distRow("ITL", s.itl_ms);
  out += distRow("TPOT", s.tpot_ms);
  out += distRow("E2E", s.e2e_ms);
  return out;
}

std::string sweepTable(const std::vector<RunResult>& runs, const Slo& slo) {
  std::string out = "============ tandem bench: sweep ============\n";
  absl::StrAppendFormat(&out, "  %8s %8s %8s %10s %10s %10s %10s %8s\n", "rate", "req/s", "out tok/s",
                        "TTFT p50", "TTFT p99", "TPOT p50", "ITL p99", slo.any() ? "goodput" : "failed");
  for (const RunResult& r : runs) {
    const Summary& s = r.summary;
    absl::StrAppendFormat(&out, "  %8s %8.3f %8.1f %10.2f %10.2f %10.2f %10.2f %8s\n",
                          r.rate ? absl::StrFormat("%g", *r.rate) : r.label, s.request_throughput,
                          s.output_throughput, s.ttft_ms.p50, s.ttft_ms.p99, s.tpot_ms.p50, s.itl_ms.p99,
                          slo.any() ? absl::StrFormat("%.3f", s.goodput.value_or(0)) : absl::StrCat(s.failed));
  }
  return out;
}

absl::Status writeTextFile(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  f << content;
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("writing ", path, " failed"));
  return absl::OkStatus();
}

}  // namespace tandem::bench
