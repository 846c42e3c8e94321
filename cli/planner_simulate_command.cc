// `tandem planner simulate`: replays a trace through prefill and decode
// workers with a profile's timings behind the router's routing code, with
// the planner's policies in the loop (bench/planner_sim/planner_simulator.h),
// and writes the JSON summary and, when asked, the SVG timeline.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/planner_sim/planner_simulator.h"
#include "bench/planner_sim/scaled_trace.h"
#include "bench/planner_sim/trace_formats.h"
#include "bench/router_sim/sim_trace.h"
#include "cli/command.h"
#include "common/mapped_file.h"
#include "planner/policies.h"
#include "planner/predictors.h"

#ifndef TANDEM_SOURCE_DIR
#define TANDEM_SOURCE_DIR "."
#endif

namespace tandem::cli {
namespace {

struct PlannerSimulateArgs {
  std::string trace;
  std::string profile = std::string(TANDEM_SOURCE_DIR) + "/planner/profiles/mi300x-llama3-8b.json";
  bench::PlannerSimOptions options;
  bench::TraceScale scale;
  std::string interval = "10s";
  std::string cold_start = "30s";
  std::string json_out;
  std::string plot_out;
  std::string decisions_out;  // JSON lines (--decisions)
  std::vector<int> static_counts;
  std::vector<std::string> window;  // FROM,LENGTH of the trace (durations)
};

// "30s", "2m", "500ms" or a plain number of seconds.
absl::StatusOr<double> parseDuration(const std::string& text, const char* flag) {
  std::string number = text;
  double unit = 1;
  if (text.size() > 2 && text.compare(text.size() - 2, 2, "ms") == 0) {
    number = text.substr(0, text.size() - 2);
    unit = 0.001;
  } else if (!text.empty() && (text.back() == 's' || text.back() == 'm' || text.back() == 'h')) {
    unit = text.back() == 's' ? 1 : text.back() == 'm' ? 60 : 3600;
    number = text.substr(0, text.size() - 1);
  }
  double value = 0;
  if (!absl::SimpleAtod(number, &value) || value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " wants a duration like 30s, 2m or 500ms, not '", text, "'"));
  }
  return value * unit;
}

absl::Status runPlannerSimulate(PlannerSimulateArgs args) {
  absl::StatusOr<double> interval = parseDuration(args.interval, "--interval");
  if (!interval.ok()) return interval.status();
  absl::StatusOr<double> cold = parseDuration(args.cold_start, "--cold-start");
  if (!cold.ok()) return cold.status();
  args.options.interval_s = *interval;
  if (!args.static_counts.empty()) {
    if (args.static_counts.size() != 2 || args.static_counts[0] < 0 || args.static_counts[1] < 1) {
      return absl::InvalidArgumentError("--static-counts wants PREFILL,DECODE (decode at least 1)");
    }
    args.options.static_counts = {args.static_counts[0], args.static_counts[1]};
  }
  args.options.cold_start_s = *cold;
  if (!(args.scale.speedup > 0)) return absl::InvalidArgumentError("--speedup must be positive");
  if (args.scale.replicas < 1) return absl::InvalidArgumentError("--replicas must be at least 1");
  absl::StatusOr<planner::WorkerProfile> profile = planner::WorkerProfile::load(args.profile);
  if (!profile.ok()) return profile.status();
  absl::StatusOr<bench::SimTrace> raw = bench::loadPlannerTrace(args.trace, args.options.block_size, args.options.seed);
  if (!raw.ok()) return raw.status();
  if (!args.window.empty()) {
    absl::StatusOr<double> from = parseDuration(args.window[0], "--window");
    if (!from.ok()) return from.status();
    absl::StatusOr<double> length = parseDuration(args.window[1], "--window");
    if (!length.ok()) return length.status();
    *raw = bench::windowTrace(*raw, *from, *length);
    if (raw->requests.empty()) return absl::InvalidArgumentError("--window holds no request of the trace");
  }
  args.scale.seed = args.options.seed;
  const bench::SimTrace trace = bench::scaleTrace(*raw, args.scale);
  std::fprintf(stderr, "%s: %zu requests over %.0f s; profile %s\n", trace.name.c_str(), trace.requests.size(),
               trace.requests.empty() ? 0.0 : trace.requests.back().arrival_s, args.profile.c_str());
  args.options.progress = true;
  args.options.record_decisions = !args.decisions_out.empty();
  absl::StatusOr<bench::PlannerSimResult> result = bench::simulatePlanner(trace, *profile, args.options);
  if (!result.ok()) return result.status();
  std::fprintf(stderr, "static: %d prefill + %d decode workers (the sizing model at the busiest interval: %d + %d)\n",
               result->static_counts.prefill, result->static_counts.decode, result->static_model_counts.prefill,
               result->static_model_counts.decode);
  std::fprintf(stderr, "%-9s %10s %10s %10s %8s %8s %8s %10s %10s %10s\n", "policy", "ttft_att", "itl_att", "gpu_h",
               "events", "max_P", "max_D", "slo_miss", "of_bound", "wall_s");
  for (const bench::PlannerPolicyResult& p : result->policies) {
    const std::string fraction =
        p.fraction_of_possible_savings ? absl::StrFormat("%.2f", *p.fraction_of_possible_savings) : "-";
    std::fprintf(stderr, "%-9s %10.4f %10.4f %10.2f %8d %8d %8d %10lld %10s %10.1f\n", p.policy.c_str(),
                 p.ttft_attainment, p.itl_attainment, p.gpu_hours, p.scale_events, p.max_prefill, p.max_decode,
                 static_cast<long long>(p.slo_misses), fraction.c_str(), p.sim_wall_s);
  }
  std::fprintf(stderr, "misses by prompt length (TTFT misses / of them over the SLO by their own prefill / waiting at their decode worker / ITL misses):\n");
  for (const bench::PlannerPolicyResult& p : result->policies) {
    std::fprintf(stderr, "  %-8s", p.policy.c_str());
    for (const bench::MissBucket& b : p.by_prompt) {
      std::fprintf(stderr, " <=%s: %lld/%lld/%lld/%lld of %lld", b.max_prompt_tokens == INT64_MAX ? "inf" : absl::StrCat(b.max_prompt_tokens / 1024, "k").c_str(),
                   static_cast<long long>(b.ttft_misses), static_cast<long long>(b.ttft_misses_service), static_cast<long long>(b.ttft_misses_local),
                   static_cast<long long>(b.itl_misses), static_cast<long long>(b.requests));
    }
    std::fprintf(stderr, "\n");
  }
  if (absl::Status s = writeFile(args.json_out, result->toJson().dump(2) + "\n"); !s.ok()) return s;
  if (!args.plot_out.empty()) {
    if (absl::Status s = writeFile(args.plot_out, result->toSvg()); !s.ok()) return s;
  }
  if (!args.decisions_out.empty()) {
    std::string lines;
    for (const bench::PlannerPolicyResult& p : result->policies) {
      for (const std::string& line : p.decisions) absl::StrAppend(&lines, line, "\n");
    }
    return writeFile(args.decisions_out, lines);
  }
  return absl::OkStatus();
}

}  // namespace

void registerPlannerSimulateCommand(CLI::App* planner) {
  auto args = std::make_shared<PlannerSimulateArgs>();
  CLI::App* cmd = planner->add_subcommand(
      "simulate", "replay a trace through prefill/decode workers with the planner in the loop (virtual time)");
  cmd->add_option("--trace", args->trace,
                  "mooncake:FILE (JSONL), azure:FILE or azure2024:FILE (Azure LLM inference CSV), burstgpt:FILE "
                  "(BurstGPT CSV) or synthetic:KIND[:key=value,...] (on-off, flash-crowd, diurnal, gamma; --seed)")
      ->required();
  cmd->add_option("--window", args->window,
                  "FROM,LENGTH: only the trace's arrivals in that span (e.g. 2h,1h of a week-long trace)")
      ->delimiter(',')
      ->expected(2);
  cmd->add_option("--profile", args->profile, "the workers' profile (tandem planner profile)")->capture_default_str();
  cmd->add_option("--policies", args->options.policies, "scaling policies to compare (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember(planner::policyNames()))
      ->capture_default_str();
  cmd->add_option("--predictor", args->options.predictor, "load predictor")
      ->check(CLI::IsMember(planner::predictorNames()))
      ->capture_default_str();
  cmd->add_option("--speedup", args->scale.speedup, "replay the arrivals this many times faster")
      ->capture_default_str();
  cmd->add_option("--replicas", args->scale.replicas,
                  "overlay this many copies of the trace (arrivals jittered, prefixes not shared)")
      ->capture_default_str();
  cmd->add_option("--replica-jitter-s", args->scale.jitter_s, "each copy's arrivals move by up to this")
      ->capture_default_str();
  cmd->add_option("--cold-start", args->cold_start, "from a scale-up decision to the worker taking requests")
      ->capture_default_str();
  cmd->add_option("--interval", args->interval, "between planner decisions")->capture_default_str();
  cmd->add_option("--ttft-slo-ms", args->options.ttft_slo_ms, "time to first token SLO")->capture_default_str();
  cmd->add_option("--itl-slo-ms", args->options.itl_slo_ms, "inter-token latency SLO (a request's mean)")
      ->capture_default_str();
  cmd->add_option("--max-prefill", args->options.bounds.max.prefill, "most prefill workers")->capture_default_str();
  cmd->add_option("--max-decode", args->options.bounds.max.decode, "most decode workers")->capture_default_str();
  cmd->add_option("--max-total", args->options.bounds.max_total, "most workers in all")->capture_default_str();
  cmd->add_option("--block-size", args->options.block_size, "tokens a KV block (prefix cache granularity)")
      ->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "seeds the routing ties and the replicas' jitter")
      ->capture_default_str();
  cmd->add_option("--jobs", args->options.jobs, "policies simulated at once (0 = one per core)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--static-counts", args->static_counts,
                  "static's prefill,decode workers (default: the sizing model at the busiest interval)")
      ->delimiter(',')
      ->expected(2);
  cmd->add_option("--burst-quantile", args->options.burst_quantile,
                  "sla: the quantile of the busiest interval of a cold start it provisions for")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--burst-window-s", args->options.burst_window_s,
                  "sla: how far back it looks for the bursts it provisions for")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--foresight", args->options.foresight,
                  "also run the perfect-foresight bound (knows the future, pays the cold start), calibrated to "
                  "meet the SLOs, and report each policy's fraction_of_possible_savings against static")
      ->capture_default_str();
  cmd->add_option("--decode-spill", args->options.decode_spill,
                  "decode workers prefill a prompt themselves while the prefill worker chosen "
                  "predicts a first token past the TTFT SLO and they predict sooner")
      ->capture_default_str();
  cmd->add_option("--router-learns-rates", args->options.router_learns_rates,
                  "the router learns each prefill worker's rate from its first tokens (its default)")
      ->capture_default_str();
  cmd->add_option("--json", args->json_out, "write the results here (JSON)")->required();
  cmd->add_option("--plot", args->plot_out, "an SVG of offered load, workers per role and attainment over time");
  cmd->add_option("--decisions", args->decisions_out,
                  "write every policy's decision each interval here, one JSON line each as the live planner logs "
                  "it (what it observed and predicted, its counts, its reason)");
  setAction(cmd, [args] { return runPlannerSimulate(*args); });
}

}  // namespace tandem::cli
