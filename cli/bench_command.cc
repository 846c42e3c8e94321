// `tandem bench`: a trace-driven load generator for OpenAI-compatible
// servers (and tandem's gRPC API). A thin layer over bench/loadgen: reads
// flags, builds the workload, arrivals and client, runs (once or per rate
// of a sweep), prints the summary and writes the JSON result and SVG plot.
#include <algorithm>
#include <cstdio>
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

absl::Status runBench(BenchArgs a) {
  ASSIGN_OR_RETURN(lg::Api api, parseApi(a.api));
  lg::Slo slo;
  if (!a.slo.empty()) {
    ASSIGN_OR_RETURN(slo, lg::parseSlo(a.slo));
  }
  if (a.burstiness <= 0) return absl::InvalidArgumentError("--burstiness must be > 0");
  if (a.speedup <= 0) return absl::InvalidArgumentError("--speedup must be > 0");
  if (a.concurrency && *a.concurrency < 1) return absl::InvalidArgumentError("--concurrency must be >= 1");
  std::vector<std::optional<double>> rates = {a.rate};
  if (!a.sweep.empty()) {
    ASSIGN_OR_RETURN(auto list, parseRates(a.sweep));
    rates.assign(list.begin(), list.end());
  }

  if (a.tokenizer.empty()) a.tokenizer = defaultModelPath();
  ASSIGN_OR_RETURN(auto tok, tokenizer::Tokenizer::load(a.tokenizer));
  ASSIGN_OR_RETURN(lg::TokenSynth synth, lg::TokenSynth::fromTokenizer(*tok));
  lg::WorkloadContext ctx{tok.get(), &synth};

  std::unique_ptr<lg::StreamClient> client;
  std::optional<lg::HttpEndpoint> http_endpoint;
  auto timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000));
  if (api == lg::Api::kGrpc) {
    ASSIGN_OR_RETURN(client, lg::GrpcStreamClient::create(a.url, timeout));
  } else {
    ASSIGN_OR_RETURN(http_endpoint, lg::parseHttpUrl(a.url));
    lg::HttpClientOptions opts;
    opts.request_timeout = timeout;
    opts.api_key = a.api_key;
    ASSIGN_OR_RETURN(auto http, lg::HttpStreamClient::create(a.url, opts));
    // a closed loop holds its connections from the start; open them before
    // the clock runs so the first round does not time TCP handshakes.
    if (a.concurrency) http->warmUp(std::min(*a.concurrency, 4096));
    client = std::move(http);
    if (a.model.empty()) {
      ASSIGN_OR_RETURN(a.model, lg::firstModelId(*http_endpoint));
      std::fprintf(stderr, "model: %s (from GET /v1/models)\n", a.model.c_str());
    }
  }
  std::optional<lg::HttpEndpoint> metrics_endpoint;
  if (a.server_metrics) {
    if (!a.metrics_url.empty()) {
      ASSIGN_OR_RETURN(metrics_endpoint, lg::parseHttpUrl(a.metrics_url));
    } else if (http_endpoint) {
      metrics_endpoint = http_endpoint;
    } else {
      return absl::InvalidArgumentError("--server-metrics with --api grpc needs --metrics-url");
    }
  }
  auto scrape = [&]() -> std::map<std::string, double> {
    absl::StatusOr<std::string> text = lg::httpGet(*metrics_endpoint, "/metrics");
    if (!text.ok()) {
      std::fprintf(stderr, "warning: %s\n", std::string(text.status().message()).c_str());
      return {};
    }
    return lg::parsePrometheusText(*text);
  };

  lg::RunnerOptions ropts;
  ropts.api = api;
  ropts.model = a.model;
  ropts.num_requests = a.num_requests;
  ropts.duration_s = a.duration_s;
  ropts.ignore_eos = !a.no_ignore_eos;
  ropts.temperature = a.temperature;

  std::vector<lg::RunResult> runs;
  std::vector<json> server_metrics;
  for (const std::optional<double>& rate : rates) {
    ASSIGN_OR_RETURN(lg::WorkloadPtr workload, lg::createWorkload(a.workload, a.wl, ctx));
    ASSIGN_OR_RETURN(ArrivalChoice arrivals, chooseArrivals(a, *workload, rate));
    ropts.max_concurrency = a.concurrency.value_or(0);
    // sessions without a rate all start at once, one stream per user.
    lg::ProgressReporter progress(arrivals.label, a.num_requests, a.duration_s);
    std::map<std::string, double> before;
    if (metrics_endpoint) before = scrape();
    ASSIGN_OR_RETURN(lg::RunResult run,
                     lg::runBenchmark(*workload, *arrivals.process, *client, tok.get(), ropts, slo, &progress));
    if (metrics_endpoint) server_metrics.push_back(lg::metricsDelta(before, scrape()));
    run.label = arrivals.label;
    run.rate = arrivals.rate;
    std::printf("%s", lg::summaryTable(run, slo).c_str());
    std::fflush(stdout);
    runs.push_back(std::move(run));
  }
  client->shutdown();
  if (runs.size() > 1) std::printf("%s", lg::sweepTable(runs, slo).c_str());

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
  if (runs.size() == 1) {
    result = lg::runJson(runs[0], slo, a.save_requests);
    if (!server_metrics.empty()) result["server_metrics"] = server_metrics[0];
  } else {
    json list = json::array();
    for (size_t i = 0; i < runs.size(); ++i) {
      json r = lg::runJson(runs[i], slo, a.save_requests);
      if (i < server_metrics.size()) r["server_metrics"] = server_metrics[i];
      list.push_back(std::move(r));
    }
    result["sweep"] = std::move(list);
  }
  result["settings"] = settings;
  if (!a.out.empty()) {
    RETURN_IF_ERROR(lg::writeTextFile(a.out, result.dump(2) + "\n"));
    std::fprintf(stderr, "wrote %s\n", a.out.c_str());
  }
  if (!a.plot.empty()) {
    std::string title = absl::StrCat("tandem bench: ", a.model, " @ ", a.url, " (", a.api, ", ", a.workload, ")");
    RETURN_IF_ERROR(lg::writeTextFile(a.plot, lg::renderPlot(runs, title)));
    std::fprintf(stderr, "wrote %s\n", a.plot.c_str());
  }
  return absl::OkStatus();
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
  cmd->add_option("--num-requests", a->num_requests, "requests to send");
  cmd->add_option("--duration", a->duration_s, "seconds to send for");
  cmd->add_option("--slo", a->slo, "goodput targets: ttft=MS,tpot=MS[,e2e=MS]");
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
