#include "router/cluster/route_planner.h"

#include <algorithm>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace tandem::router::cluster {
namespace {

std::unique_ptr<RoutingPolicy> policyOrKv(const RoutePlannerOptions& options) {
  absl::StatusOr<std::unique_ptr<RoutingPolicy>> p = makeRoutingPolicy(options.policy, options.costs);
  if (p.ok()) return std::move(*p);
  return std::move(*makeRoutingPolicy("kv", options.costs));
}

}  // namespace

bool fitsInCache(const WorkerState& worker, int64_t final_len) {
  const int block_size = std::max(1, worker.info.block_size());
  if (worker.info.num_blocks() <= 0) return true;  // unknown: let the worker decide
  const int64_t capped = worker.info.max_model_len() > 0
                             ? std::min<int64_t>(final_len, worker.info.max_model_len())
                             : final_len;
  // the last token's KV is never stored (as generation::checkRequest).
  const int64_t blocks = (std::max<int64_t>(capped - 1, 0) + block_size - 1) / block_size;
  return blocks <= worker.info.num_blocks();
}

absl::StatusOr<std::unique_ptr<RoutePlanner>> RoutePlanner::create(RoutePlannerOptions options,
                                                                   const KvIndex* index) {
  if (absl::StatusOr<std::unique_ptr<RoutingPolicy>> p = makeRoutingPolicy(options.policy, options.costs);
      !p.ok()) {
    return p.status();
  }
  return std::make_unique<RoutePlanner>(std::move(options), index);
}

RoutePlanner::RoutePlanner(RoutePlannerOptions options, const KvIndex* index)
    : options_(std::move(options)),
      index_(index),
      policy_(policyOrKv(options_)),
      load_(options_.load),
      rng_(options_.seed != 0 ? options_.seed : std::random_device{}()) {}

TierMatch RoutePlanner::matchOf(const std::string& address) const {
  for (const auto& [a, m] : matches_) {
    if (a == address) return m;
  }
  return {};
}

RouteCandidate RoutePlanner::candidate(const WorkerState& w, double now_s, int64_t prompt_tokens) const {
  RouteCandidate c;
  c.address = &w.address;
  c.cached = matchOf(w.address);
  c.load = load_.load(w.address, now_s, prompt_tokens);
  c.num_blocks = w.info.num_blocks();
  c.free_blocks = w.has_stats ? w.stats.num_free_blocks() : w.info.num_blocks();
  return c;
}

bool RoutePlanner::decodeCandidates(const std::vector<WorkerState>& workers, int64_t prompt_tokens, int64_t final_len,
                                    const std::map<std::string, int>& in_flight,
                                    const std::vector<std::string>& exclude, bool honour_exclude,
                                    double now_s, std::vector<RouteCandidate>& out) const {
  out.clear();
  for (const WorkerState& w : workers) {
    if (!w.routable() || !w.decodeCapable() || !fitsInCache(w, final_len)) continue;
    if (honour_exclude && std::find(exclude.begin(), exclude.end(), w.address) != exclude.end()) {
      continue;
    }
    RouteCandidate c = candidate(w, now_s, prompt_tokens);
    if (auto it = in_flight.find(w.address); it != in_flight.end()) {
      c.load.running = std::max<int64_t>(c.load.running, it->second);
    }
    out.push_back(c);
  }
  return !out.empty();
}

absl::StatusOr<RouteDecision> RoutePlanner::plan(std::span<const int32_t> prompt, int max_tokens,
                                                 const std::vector<WorkerState>& workers,
                                                 const std::map<std::string, int>& in_flight,
                                                 const std::vector<std::string>& exclude) {
  RouteQuery query;
  query.prompt = prompt;
  query.max_tokens = max_tokens;
  return plan(query, workers, in_flight, exclude);
}

absl::StatusOr<RouteDecision> RoutePlanner::plan(const RouteQuery& query,
                                                 const std::vector<WorkerState>& workers,
                                                 const std::map<std::string, int>& in_flight,
                                                 const std::vector<std::string>& exclude) {
  const int64_t prompt_tokens =
      query.prompt.empty() ? query.prompt_tokens : static_cast<int64_t>(query.prompt.size());
  const int64_t final_len = prompt_tokens + query.max_tokens;
  int block_size = 0;
  for (const WorkerState& w : workers) {
    if (w.has_info && w.info.block_size() > 0) {
      block_size = w.info.block_size();
      break;
    }
  }
  block_size = std::max(1, block_size);
  std::vector<kvcache::BlockHash> computed;
  std::span<const kvcache::BlockHash> hashes = query.hashes;
  if (!query.prompt.empty() && index_ != nullptr) {
    computed = kvcache::blockHashes(query.prompt, block_size);
    hashes = computed;
  }

  std::lock_guard lock(mu_);
  matches_.clear();
  if (index_ != nullptr && !hashes.empty()) matches_ = index_->matchAll(hashes);
  // the workers that left the pool (as the KvSubscriber forgets them in
  // the index) leave the load model: the snapshot is the pool.
  load_.retainWorkers([&workers](const std::string& address) {
    return std::any_of(workers.begin(), workers.end(),
                       [&address](const WorkerState& w) { return w.address == address; });
  });
  for (const WorkerState& w : workers) {
    if (w.has_stats) {
      load_.observeStats(w.address, static_cast<double>(w.stats.num_prefill_tokens_queued()),
                         w.stats.num_running() + w.stats.num_waiting(), w.stats.num_active_blocks());
    }
  }
  std::vector<RouteCandidate> candidates;
  if (!decodeCandidates(workers, prompt_tokens, final_len, in_flight, exclude, true, query.now_s, candidates) &&
      !decodeCandidates(workers, prompt_tokens, final_len, in_flight, exclude, false, query.now_s, candidates)) {
    return absl::UnavailableError("no healthy decode worker");
  }
  RouteAsk ask;
  ask.prompt_tokens = prompt_tokens;
  ask.prompt_blocks = static_cast<int64_t>(hashes.size());
  ask.block_size = block_size;
  ask.max_tokens = query.max_tokens;
  const RouteCandidate d = candidates[policy_->choose(ask, candidates, rng_)];
  double best_ttft = estimateTtft(ask, candidates.front(), options_.costs);
  for (const RouteCandidate& c : candidates) best_ttft = std::min(best_ttft, estimateTtft(ask, c, options_.costs));

  RouteDecision decision;
  decision.decode_address = *d.address;
  decision.block_size = block_size;
  decision.cached_blocks = d.cached.any;
  decision.uncached_tokens =
      query.scores_prompt ? static_cast<int>(prompt_tokens) : static_cast<int>(uncachedTokens(ask, d));
  decision.predicted_cached_tokens = prompt_tokens - decision.uncached_tokens;
  decision.predicted_ttft_s = estimateTtft(ask, d, options_.costs);

  std::vector<RouteCandidate> prefill;
  if (!query.scores_prompt && decision.uncached_tokens > options_.max_local_prefill_tokens) {
    for (const WorkerState& w : workers) {
      if (!w.routable() || !w.prefillOnly()) continue;
      RouteCandidate c = candidate(w, query.now_s, prompt_tokens);
      if (std::max<double>(c.load.queued_prefill_tokens, w.stats.num_prefill_tokens_queued()) >=
          static_cast<double>(options_.max_prefill_queue_tokens)) {
        continue;
      }
      // D's uncached blocks travel from P to D.
      c.transfer_blocks = std::max<int64_t>(0, ask.prompt_blocks - d.cached.any);
      prefill.push_back(c);
    }
  }
  if (!prefill.empty()) {
    const RouteCandidate p = prefill[policy_->choose(ask, prefill, rng_)];
    const double p_ttft = estimateTtft(ask, p, options_.costs);
    for (const RouteCandidate& c : prefill) best_ttft = std::min(best_ttft, estimateTtft(ask, c, options_.costs));
    const bool spill = options_.spill_prefill_over_s > 0 && p_ttft > options_.spill_prefill_over_s &&
                       decision.predicted_ttft_s <= options_.spill_prefill_over_s;
    if (!spill) {
      decision.prefill_address = *p.address;
      decision.predicted_cached_tokens = prompt_tokens - uncachedTokens(ask, p);
      decision.predicted_ttft_s = p_ttft;
    }
  }
  if (query.may_shed && options_.ttft_slo_s > 0 && best_ttft > options_.ttft_slo_s) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "no worker can start this request within the TTFT SLO (%.0f ms; the best predicts %.0f ms)",
        options_.ttft_slo_s * 1000, best_ttft * 1000));
  }
  bool any_cached = false;
  for (const auto& [address, m] : matches_) any_cached = any_cached || m.any > 0;
  decision.outcome = decision.predicted_cached_tokens > 0 ? RouteOutcome::kCacheHit
                     : any_cached                        ? RouteOutcome::kSpread
                                                         : RouteOutcome::kCold;
  if (query.key != 0) {
    const int64_t blocks = (final_len + block_size - 1) / block_size;
    const int64_t prefill_tokens = prompt_tokens - decision.predicted_cached_tokens;
    if (decision.prefill_address.empty()) {
      load_.onRouted(query.key, decision.decode_address, prefill_tokens, blocks, query.now_s, prompt_tokens);
    } else {
      load_.onRouted(query.key, decision.decode_address, 0, blocks, query.now_s);
      load_.onRouted(prefillKey(query.key), decision.prefill_address, prefill_tokens, 0, query.now_s,
                     prompt_tokens);
    }
  }
  return decision;
}

void RoutePlanner::firstToken(uint64_t key, double now_s) {
  load_.onFirstToken(key, now_s);
  load_.onFirstToken(prefillKey(key), now_s);
  // P's part ends with the first token.
  load_.onFinished(prefillKey(key), 1, now_s);
}

void RoutePlanner::finished(uint64_t key, int64_t output_tokens, double now_s) {
  load_.onFinished(key, output_tokens, now_s);
  load_.onFinished(prefillKey(key), 1, now_s);
}

}  // namespace tandem::router::cluster
