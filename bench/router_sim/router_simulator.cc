#include "bench/router_sim/router_simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "common/parallel_jobs.h"
#include "router/cluster/route_planner.h"

namespace tandem::bench {
namespace {

using router::cluster::KvIndex;
using router::cluster::KvIndexOptions;
using router::cluster::RouteDecision;
using router::cluster::RoutePlanner;
using router::cluster::RoutePlannerOptions;
using router::cluster::RouteQuery;
using router::cluster::WorkerState;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double rank = p / 100 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

int64_t cachedTokens(const SimRequest& r, int64_t blocks, int block_size) {
  return std::min(blocks * block_size, r.prompt_tokens);
}

absl::StatusOr<PolicyResult> runPolicy(const SimTrace& trace, int block_size, int64_t capacity,
                                       const RouterSimOptions& options, const std::string& policy) {
  const auto wall_start = std::chrono::steady_clock::now();
  KvIndex index(KvIndexOptions{.max_blocks = 0});
  RoutePlannerOptions planner_options;
  planner_options.policy = policy;
  planner_options.seed = options.seed * 1000003 + 1;
  planner_options.ttft_slo_s = options.ttft_slo_ms / 1000;
  planner_options.load.default_prefill_tokens_per_s = options.prefill_tokens_per_s;
  planner_options.load.default_decode_s_per_step = options.decode_ms_per_step / 1000;
  absl::StatusOr<std::unique_ptr<RoutePlanner>> planner = RoutePlanner::create(planner_options, &index);
  if (!planner.ok()) return planner.status();

  SimWorkerConfig config;
  config.capacity_blocks = capacity;
  config.block_size = block_size;
  config.prefill_tokens_per_s = options.prefill_tokens_per_s;
  config.decode_s_per_step = options.decode_ms_per_step / 1000;
  std::vector<std::unique_ptr<SimWorker>> workers;
  std::vector<WorkerState> states(options.workers);
  for (int i = 0; i < options.workers; ++i) {
    const std::string address = absl::StrFormat("sim-%d:1", i);
    workers.push_back(std::make_unique<SimWorker>(address, linearModel(config), &index));
    WorkerState& s = states[i];
    s.address = address;
    s.has_info = true;
    s.healthy = true;
    s.has_stats = true;
    s.info.set_worker_id(address);
    s.info.set_address(address);
    s.info.set_role(tandem::v1::WORKER_ROLE_BOTH);
    s.info.set_block_size(block_size);
    s.info.set_num_blocks(static_cast<int32_t>(std::min<int64_t>(capacity, INT32_MAX)));
    s.info.set_max_model_len(1 << 30);
    s.stats = workers[i]->stats();
  }
  auto workerOf = [&](const std::string& address) {
    for (int i = 0; i < options.workers; ++i) {
      if (workers[i]->address() == address) return i;
    }
    return -1;
  };

  const size_t n = trace.requests.size();
  std::vector<double> arrival(n), ttft, e2e;
  ttft.reserve(n);
  e2e.reserve(n);
  int64_t prompt_tokens = 0, cached_tokens = 0, rejected = 0;
  std::vector<SimOutcome> outcomes;
  auto handle = [&](const SimOutcome& o) {
    const uint64_t key = static_cast<uint64_t>(o.request) + 1;
    if (o.kind == SimOutcome::kFirstToken) {
      ttft.push_back(o.time - arrival[o.request]);
      (*planner)->firstToken(key, o.time);
    } else {
      e2e.push_back(o.time - arrival[o.request]);
      (*planner)->finished(key, trace.requests[o.request].output_tokens, o.time);
    }
  };
  // runs every worker's steps that end before `t`, in time order.
  auto runUntil = [&](double t) {
    while (true) {
      int next = -1;
      double when = t;
      for (int i = 0; i < options.workers; ++i) {
        const double w = workers[i]->nextEventTime();
        if (w <= when && w < SimWorker::kNever) {
          when = w;
          next = i;
        }
      }
      if (next < 0) return;
      outcomes.clear();
      workers[next]->advanceTo(when, outcomes);
      for (const SimOutcome& o : outcomes) handle(o);
    }
  };

  double next_stats = 0;
  for (size_t i = 0; i < n; ++i) {
    const SimRequest& r = trace.requests[i];
    const double t = r.arrival_s / options.speedup;
    arrival[i] = t;
    runUntil(t);
    if (t >= next_stats) {
      for (int w = 0; w < options.workers; ++w) states[w].stats = workers[w]->stats();
      next_stats = t + options.stats_interval_s;
    }
    RouteQuery query;
    query.hashes = r.hashes;
    query.prompt_tokens = r.prompt_tokens;
    query.max_tokens = static_cast<int>(std::min<int64_t>(r.output_tokens, INT32_MAX));
    query.key = static_cast<uint64_t>(i) + 1;
    query.now_s = t;
    absl::StatusOr<RouteDecision> d = (*planner)->plan(query, states, {}, {});
    if (absl::IsResourceExhausted(d.status())) {
      ++rejected;
      continue;
    }
    if (!d.ok()) return d.status();
    const int w = workerOf(d->decode_address);
    if (w < 0) return absl::InternalError("the planner chose an unknown worker");
    prompt_tokens += r.prompt_tokens;
    const int64_t cached = workers[w]->cachedTokens(r);
    cached_tokens += cached;
    workers[w]->addLocal(static_cast<int>(i), &r, r.prompt_tokens - cached, t);
  }
  runUntil(SimWorker::kNever);

  PolicyResult result;
  result.policy = policy;
  result.hit_rate = prompt_tokens > 0 ? static_cast<double>(cached_tokens) / static_cast<double>(prompt_tokens) : 0;
  result.ttft_p50_ms = percentile(ttft, 50) * 1000;
  result.ttft_p99_ms = percentile(ttft, 99) * 1000;
  result.e2e_p99_ms = percentile(e2e, 99) * 1000;
  double max_busy = 0, sum_busy = 0;
  for (const auto& w : workers) {
    max_busy = std::max(max_busy, w->busySeconds());
    sum_busy += w->busySeconds();
  }
  result.imbalance = sum_busy > 0 ? max_busy / (sum_busy / options.workers) : 1;
  result.rejected = rejected;
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace

double oracleHitRate(const SimTrace& trace, int block_size) {
  absl::flat_hash_set<kvcache::BlockHash> seen;
  int64_t prompt = 0, cached = 0;
  for (const SimRequest& r : trace.requests) {
    int64_t hit = 0;
    while (hit < static_cast<int64_t>(r.hashes.size()) && seen.contains(r.hashes[hit])) ++hit;
    prompt += r.prompt_tokens;
    cached += cachedTokens(r, hit, block_size);
    seen.insert(r.hashes.begin(), r.hashes.end());
  }
  return prompt > 0 ? static_cast<double>(cached) / static_cast<double>(prompt) : 0;
}

absl::StatusOr<RouterSimResult> simulateRouter(const SimTrace& trace, int block_size,
                                               const RouterSimOptions& options) {
  if (options.workers <= 0) return absl::InvalidArgumentError("--workers must be positive");
  if (options.speedup <= 0) return absl::InvalidArgumentError("--speedup must be positive");
  if (options.prefill_tokens_per_s <= 0 || options.decode_ms_per_step <= 0) {
    return absl::InvalidArgumentError("--prefill-tokens-per-s and --decode-ms-per-step must be positive");
  }
  RouterSimResult result;
  result.trace = trace.name;
  result.requests = static_cast<int64_t>(trace.requests.size());
  result.oracle_hit_rate = oracleHitRate(trace, block_size);
  result.capacity_blocks =
      options.capacity_blocks > 0
          ? options.capacity_blocks
          : std::max<int64_t>(1, static_cast<int64_t>(std::llround(options.kv_capacity_fraction *
                                                                   static_cast<double>(trace.distinct_blocks))));
  // each policy's run is independent (its own index, planner and workers;
  // the trace is read only): run them on `jobs` threads.
  const size_t n = options.policies.size();
  std::vector<absl::StatusOr<PolicyResult>> runs(n, absl::UnknownError("not run"));
  runJobs(n, options.jobs, [&](size_t i) {
    runs[i] = runPolicy(trace, block_size, result.capacity_blocks, options, options.policies[i]);
  });
  for (absl::StatusOr<PolicyResult>& r : runs) {
    if (!r.ok()) return r.status();
    result.policies.push_back(std::move(*r));
  }
  return result;
}

nlohmann::json RouterSimResult::toJson() const {
  nlohmann::json j;
  j["trace"] = trace;
  j["requests"] = requests;
  j["oracle_hit_rate"] = oracle_hit_rate;
  j["kv_capacity_blocks"] = capacity_blocks;
  nlohmann::json policies_json = nlohmann::json::object();
  for (const PolicyResult& p : policies) {
    policies_json[p.policy] = {{"hit_rate", p.hit_rate},       {"ttft_p50_ms", p.ttft_p50_ms},
                               {"ttft_p99_ms", p.ttft_p99_ms}, {"e2e_p99_ms", p.e2e_p99_ms},
                               {"imbalance", p.imbalance},     {"rejected", p.rejected},
                               {"sim_wall_s", p.wall_s}};
  }
  j["policies"] = std::move(policies_json);
  return j;
}

std::string RouterSimResult::toSvg() const {
  const int bar = 36, gap = 14, left = 110, height = 160;
  const int width = left + static_cast<int>(policies.size()) * (bar * 2 + gap) + 40;
  double max_ttft = 1;
  for (const PolicyResult& p : policies) max_ttft = std::max(max_ttft, p.ttft_p99_ms);
  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
      "font-size=\"11\">\n<text x=\"10\" y=\"16\" font-size=\"13\">%s: hit rate (blue, oracle %.0f%%) "
      "and TTFT p99 (orange, max %.0f ms)</text>\n",
      width, height + 60, trace, oracle_hit_rate * 100, max_ttft);
  int x = left;
  for (const PolicyResult& p : policies) {
    const double h1 = p.hit_rate * height, h2 = p.ttft_p99_ms / max_ttft * height;
    absl::StrAppendFormat(&svg,
                          "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#4a7fc1\"/>\n"
                          "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" fill=\"#e08a2c\"/>\n"
                          "<text x=\"%d\" y=\"%d\">%s</text>\n",
                          x, 30 + height - h1, bar, h1, x + bar, 30 + height - h2, bar, h2, x,
                          height + 45, p.policy);
    x += bar * 2 + gap;
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tandem::bench
