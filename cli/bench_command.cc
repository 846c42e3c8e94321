// `tandem bench`: a trace-driven load generator for OpenAI-compatible
// servers (and tandem's gRPC API). A thin layer over bench/loadgen: reads
// flags, builds the workload, arrivals and client, runs (once or per rate
// of a sweep), prints the summary and writes the JSON result and SVG plot.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/loadgen/arrival.h"
#include "bench/loadgen/grpc_stream_client.h"
#include "bench/loadgen/http_fetch.h"
#include "bench/loadgen/http_stream_client.h"
#include "bench/loadgen/progress.h"
#include "bench/loadgen/report.h"
#include "bench/loadgen/runner.h"
#include "bench/loadgen/server_metrics.h"
#include "bench/loadgen/svg_plot.h"
#include "bench/loadgen/token_synth.h"
#include "bench/loadgen/workload.h"
#include "cli/command.h"
#include "cli/default_model.h"
#include "common/status.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::cli {
namespace {

using nlohmann::json;
namespace lg = tandem::bench;

struct BenchArgs {
  std::string url;
  std::string model;
  std::string api = "completions";
  std::string workload = "random";
  lg::WorkloadOptions wl;
  std::string tokenizer;
  std::optional<double> rate;
  double burstiness = 1.0;
  double speedup = 1.0;
  std::optional<int> concurrency;
  std::string sweep;
  std::optional<uint64_t> num_requests;
  std::optional<double> duration_s;
  std::string slo;
  std::string out;
  std::string plot;
  double timeout_s = 600;
  std::string api_key;
  bool server_metrics = false;
  std::string metrics_url;
  bool save_requests = false;
  bool no_ignore_eos = false;
  std::optional<double> temperature;
};

absl::StatusOr<std::vector<double>> parseRates(const std::string& text) {
  std::vector<double> rates;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    double r;
    if (!absl::SimpleAtod(part, &r) || !(r > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("--sweep: '", part, "' is not a rate > 0"));
    }
    rates.push_back(r);
  }
  if (rates.empty()) return absl::InvalidArgumentError("--sweep: no rates");
  return rates;
}

absl::StatusOr<lg::Api> parseApi(const std::string& name) {
  if (name == "completions") return lg::Api::kCompletions;
  if (name == "chat") return lg::Api::kChat;
  if (name == "grpc") return lg::Api::kGrpc;
  return absl::InvalidArgumentError(absl::StrCat("--api ", name, ": expected completions, chat or grpc"));
}

// one run's arrivals and label from the flags; `rate` overrides --rate.
struct ArrivalChoice {
  lg::ArrivalProcessPtr process;
  std::string label;
  std::optional<double> rate;
};

absl::StatusOr<ArrivalChoice> chooseArrivals(const BenchArgs& a, const lg::Workload& w, std::optional<double> rate) {
  if (rate) {
    std::string label = absl::StrFormat("rate=%g/s", *rate);
    if (a.concurrency) absl::StrAppendFormat(&label, ", max %d in flight", *a.concurrency);
    return ArrivalChoice{a.burstiness == 1.0 ? lg::poissonArrivals(*rate, a.wl.seed)
                                             : lg::gammaArrivals(*rate, a.burstiness, a.wl.seed),
                         label, rate};
  }
  if (a.concurrency) {
    return ArrivalChoice{lg::closedLoopArrivals(), absl::StrFormat("concurrency=%d", *a.concurrency), std::nullopt};
  }
  if (w.hasTimestamps()) {
    return ArrivalChoice{lg::traceArrivals(a.speedup), absl::StrFormat("trace x%g", a.speedup), std::nullopt};
  }
  return absl::InvalidArgumentError("give --rate, --concurrency or --sweep (or a trace workload)");
}

// the settings a run needs beyond the flags, checked: the api, the SLO and
// the rates to run (one, or a sweep's).
struct BenchPlan {
  lg::Api api;
  lg::Slo slo;
  std::vector<std::optional<double>> rates;
};

absl::StatusOr<BenchPlan> planBench(const BenchArgs& a) {
  BenchPlan plan;
  ASSIGN_OR_RETURN(plan.api, parseApi(a.api));
  if (!a.slo.empty()) {
    ASSIGN_OR_RETURN(plan.slo, lg::parseSlo(a.slo));
  }
  if (a.burstiness <= 0) return absl::InvalidArgumentError("--burstiness must be > 0");
  if (a.speedup <= 0) return absl::InvalidArgumentError("--speedup must be > 0");
  if (a.concurrency && *a.concurrency < 1) return absl::InvalidArgumentError("--concurrency must be >= 1");
  plan.rates = {a.rate};
  if (!a.sweep.empty()) {
    ASSIGN_OR_RETURN(auto list, parseRates(a.sweep));
    plan.rates.assign(list.begin(), list.end());
  }
  return plan;
}

// the stream client of --api, and the HTTP endpoint when it speaks HTTP.
struct BenchConnection {
  std::unique_ptr<lg::StreamClient> client;
  std::optional<lg::HttpEndpoint> http_endpoint;
};

// connects to --url; asks the server for its model when --model is empty
// (HTTP only) and stores it in `a`.
absl::StatusOr<BenchConnection> connect(BenchArgs& a, lg::Api api) {
  BenchConnection c;
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  if (api == lg::Api::kGrpc) {
    ASSIGN_OR_RETURN(c.client, lg::GrpcStreamClient::create(a.url, timeout));
    return c;
  }
  ASSIGN_OR_RETURN(c.http_endpoint, lg::parseHttpUrl(a.url));
  lg::HttpClientOptions opts;
  opts.request_timeout = timeout;
  opts.api_key = a.api_key;
  ASSIGN_OR_RETURN(auto http, lg::HttpStreamClient::create(a.url, opts));
  // a closed loop holds its connections from the start; open them before
  // the clock runs so the first round does not time TCP handshakes.
  if (a.concurrency) http->warmUp(std::min(*a.concurrency, 4096));
  c.client = std::move(http);
  if (a.model.empty()) {
    ASSIGN_OR_RETURN(a.model, lg::firstModelId(*c.http_endpoint));
    std::fprintf(stderr, "model: %s (from GET /v1/models)\n", a.model.c_str());
  }
  return c;
}

// where to scrape /metrics (none without --server-metrics).
absl::StatusOr<std::optional<lg::HttpEndpoint>> metricsEndpoint(const BenchArgs& a,
                                                                const BenchConnection& c) {
  if (!a.server_metrics) return std::nullopt;
  if (!a.metrics_url.empty()) return lg::parseHttpUrl(a.metrics_url);
  if (c.http_endpoint) return c.http_endpoint;
  return absl::InvalidArgumentError("--server-metrics with --api grpc needs --metrics-url");
}

std::map<std::string, double> scrapeMetrics(const lg::HttpEndpoint& endpoint) {
  absl::StatusOr<std::string> text = lg::httpGet(endpoint, "/metrics");
  absl::StatusOr<std::map<std::string, double>> values =
      text.ok() ? lg::seriesValues(*text) : text.status();
  if (!values.ok()) {
    std::fprintf(stderr, "warning: %s\n", std::string(values.status().message()).c_str());
    return {};
  }
  return *std::move(values);
}

// every run's result and, with --server-metrics, what the server's
// counters moved by during it.
struct BenchRuns {
  std::vector<lg::RunResult> runs;
  std::vector<json> server_metrics;
};

// one run per rate, each summarised on stdout as it ends.
absl::StatusOr<BenchRuns> runAll(const BenchArgs& a, const BenchPlan& plan, const lg::WorkloadContext& ctx,
                                 lg::StreamClient& client,
                                 const std::optional<lg::HttpEndpoint>& metrics_endpoint) {
  lg::RunnerOptions ropts;
  ropts.api = plan.api;
  ropts.model = a.model;
  ropts.num_requests = a.num_requests;
  ropts.duration_s = a.duration_s;
  ropts.ignore_eos = !a.no_ignore_eos;
  ropts.temperature = a.temperature;

  BenchRuns out;
  for (const std::optional<double>& rate : plan.rates) {
    ASSIGN_OR_RETURN(lg::WorkloadPtr workload, lg::createWorkload(a.workload, a.wl, ctx));
    ASSIGN_OR_RETURN(ArrivalChoice arrivals, chooseArrivals(a, *workload, rate));
    ropts.max_concurrency = a.concurrency.value_or(0);
    // sessions without a rate all start at once, one stream per user.
    lg::ProgressReporter progress(arrivals.label, a.num_requests, a.duration_s);
    std::map<std::string, double> before;
    if (metrics_endpoint) before = scrapeMetrics(*metrics_endpoint);
    ASSIGN_OR_RETURN(lg::RunResult run,
                     lg::runBenchmark(*workload, *arrivals.process, client, ctx.tokenizer, ropts, plan.slo, &progress));
    if (metrics_endpoint) out.server_metrics.push_back(lg::metricsDelta(before, scrapeMetrics(*metrics_endpoint)));
    run.label = arrivals.label;
    run.rate = arrivals.rate;
    std::printf("%s", lg::summaryTable(run, plan.slo).c_str());
    std::fflush(stdout);
    out.runs.push_back(std::move(run));
  }
  return out;
}

// the JSON result: one run's, or a sweep's list, and the settings.
json resultJson(const BenchArgs& a, const BenchRuns& r, const lg::Slo& slo) {
  json settings = {{"url", a.url},
                   {"model", a.model},
                   {"api", a.api},
                   {"workload", a.workload},
                   {"tokenizer", a.tokenizer},
                   {"rate", a.rate ? json(*a.rate) : json(nullptr)},
                   {"sweep", a.sweep},
                   {"burstiness", a.burstiness},
                   {"speedup", a.speedup},
                   {"concurrency", a.concurrency ? json(*a.concurrency) : json(nullptr)},
                   {"num_requests", a.num_requests ? json(*a.num_requests) : json(nullptr)},
                   {"duration_s", a.duration_s ? json(*a.duration_s) : json(nullptr)},
                   {"ignore_eos", !a.no_ignore_eos},
                   {"seed", a.wl.seed}};
  json result;
  if (r.runs.size() == 1) {
    result = lg::runJson(r.runs[0], slo, a.save_requests);
    if (!r.server_metrics.empty()) result["server_metrics"] = r.server_metrics[0];
  } else {
    json list = json::array();
    for (size_t i = 0; i < r.runs.size(); ++i) {
      json run = lg::runJson(r.runs[i], slo, a.save_requests);
      if (i < r.server_metrics.size()) run["server_metrics"] = r.server_metrics[i];
      list.push_back(std::move(run));
    }
    result["sweep"] = std::move(list);
  }
  result["settings"] = settings;
  return result;
}

// --out (the JSON result) and --plot (the SVG).
absl::Status writeOutputs(const BenchArgs& a, const BenchRuns& r, const lg::Slo& slo) {
  if (!a.out.empty()) {
    RETURN_IF_ERROR(lg::writeTextFile(a.out, resultJson(a, r, slo).dump(2) + "\n"));
    std::fprintf(stderr, "wrote %s\n", a.out.c_str());
  }
  if (!a.plot.empty()) {
    std::string title = absl::StrCat("tandem bench: ", a.model, " @ ", a.url, " (", a.api, ", ", a.workload, ")");
    RETURN_IF_ERROR(lg::writeTextFile(a.plot, lg::renderPlot(r.runs, title)));
    std::fprintf(stderr, "wrote %s\n", a.plot.c_str());
  }
  return absl::OkStatus();
}

absl::Status runBench(BenchArgs a) {
  ASSIGN_OR_RETURN(BenchPlan plan, planBench(a));
  if (a.tokenizer.empty()) a.tokenizer = defaultModelPath();
  ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::load(a.tokenizer));
  ASSIGN_OR_RETURN(lg::TokenSynth synth, lg::TokenSynth::fromTokenizer(*tok));
  const lg::WorkloadContext ctx{tok.get(), &synth};
  ASSIGN_OR_RETURN(BenchConnection connection, connect(a, plan.api));
  ASSIGN_OR_RETURN(std::optional<lg::HttpEndpoint> metrics_endpoint, metricsEndpoint(a, connection));
  ASSIGN_OR_RETURN(BenchRuns runs, runAll(a, plan, ctx, *connection.client, metrics_endpoint));
  connection.client->shutdown();
  if (runs.runs.size() > 1) std::printf("%s", lg::sweepTable(runs.runs, plan.slo).c_str());
  return writeOutputs(a, runs, plan.slo);
}

}  // namespace

void registerBenchCommand(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand("bench", "load-test an OpenAI-compatible server (or tandem gRPC) and report latency and throughput");
  cmd->add_option("--url", a->url, "server URL: http://host:port (grpc: host:port)")->required();
  cmd->add_option("--model", a->model, "model name (default: the first of GET /v1/models)");
  cmd->add_option("--api", a->api, "completions | chat | grpc")->capture_default_str();
  cmd->add_option("--workload", a->workload, "random | multiturn | sharegpt:FILE | mooncake:FILE | azure:FILE")
      ->capture_default_str();
  cmd->add_option("--input-len", a->wl.input_len, "random/multiturn: prompt tokens")->capture_default_str();
  cmd->add_option("--output-len", a->wl.output_len, "random/multiturn: output tokens")->capture_default_str();
  cmd->add_option("--range-ratio", a->wl.range_ratio, "lengths uniform in len*(1 +- ratio)")->capture_default_str();
  cmd->add_option("--lengths-file", a->wl.lengths_file, "random: CSV of input,output lengths to cycle through");
  cmd->add_option("--length-scale", a->wl.length_scale, "traces: multiply lengths (and Mooncake block size)")
      ->capture_default_str();
  cmd->add_option("--trace-block-tokens", a->wl.trace_block_tokens, "Mooncake: tokens per hash id in the trace")
      ->capture_default_str();
  cmd->add_option("--max-input-len", a->wl.max_input_len, "cap prompt tokens after scaling (0 = none)");
  cmd->add_option("--max-output-len", a->wl.max_output_len, "cap output tokens after scaling (0 = none)");
  cmd->add_option("--sharegpt-output-len", a->wl.sharegpt_output_len, "sharegpt: fixed output length");
  cmd->add_option("--users", a->wl.users, "multiturn: sessions")->capture_default_str();
  cmd->add_option("--turns", a->wl.turns, "multiturn: turns per session")->capture_default_str();
  cmd->add_option("--think-time", a->wl.think_time_s, "multiturn: seconds between turns")->capture_default_str();
  cmd->add_option("--seed", a->wl.seed, "seed of prompts and arrivals")->capture_default_str();
  cmd->add_option("--tokenizer", a->tokenizer, "tokenizer (HF dir or .gguf; default: the embedded stories260K)");
  auto* rate = cmd->add_option("--rate", a->rate, "open loop: requests per second (Poisson)");
  cmd->add_option("--burstiness", a->burstiness, "gamma arrivals: 1 = Poisson, < 1 burstier")->capture_default_str();
  cmd->add_option("--speedup", a->speedup, "trace arrivals: replay this many times faster")->capture_default_str();
  cmd->add_option("--concurrency", a->concurrency, "closed loop: requests in flight (with --rate: a cap)");
  auto* sweep = cmd->add_option("--sweep", a->sweep, "rates R1,R2,... : one run each");
  rate->excludes(sweep);
  cmd->add_option("--num-requests", a->num_requests,
                  "requests to send (default: until --duration, or the workload's end)");
  cmd->add_option("--duration", a->duration_s, "seconds to send for");
  cmd->add_option("--slo", a->slo,
                  "goodput targets: ttft=MS,tpot=MS[,e2e=MS] (none: every successful request counts)");
  cmd->add_option("--out", a->out, "write the JSON result here");
  cmd->add_option("--plot", a->plot, "write an SVG plot here");
  cmd->add_option("--timeout", a->timeout_s, "seconds before a request fails")->capture_default_str();
  cmd->add_option("--api-key", a->api_key, "sent as Authorization: Bearer")->envname("OPENAI_API_KEY");
  cmd->add_flag("--server-metrics", a->server_metrics, "scrape the server's /metrics before and after");
  cmd->add_option("--metrics-url", a->metrics_url, "where /metrics is (default: --url)");
  cmd->add_flag("--save-requests", a->save_requests, "per-request records in the JSON");
  cmd->add_flag("--no-ignore-eos", a->no_ignore_eos, "let the model stop at EOS");
  cmd->add_option("--temperature", a->temperature, "sampling temperature (default: the server's)");
  setAction(cmd, [a] { return runBench(*a); });
}

}  // namespace tandem::cli
