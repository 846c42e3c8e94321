#include "router/cluster/route_planner.h"

#include <algorithm>
#include <mutex>

#include "absl/status/status.h"

namespace tandem::router::cluster {
namespace {

int64_t decodeLoad(const WorkerState& w, const std::map<std::string, int>& in_flight) {
  const int64_t reported = w.stats.num_running() + w.stats.num_waiting();
  auto it = in_flight.find(w.address);
  return std::max<int64_t>(reported, it == in_flight.end() ? 0 : it->second);
}

}  // namespace

bool fitsInCache(const WorkerState& worker, int64_t final_len) {
  const int block_size = std::max(1, worker.info.block_size());
  if (worker.info.num_blocks() <= 0) return true;  // unknown: let the worker decide
  const int64_t capped = worker.info.max_model_len() > 0
                             ? std::min<int64_t>(final_len, worker.info.max_model_len())
                             : final_len;
  // the last token's KV is never stored (as Scheduler::checkRequest).
  const int64_t blocks = (std::max<int64_t>(capped - 1, 0) + block_size - 1) / block_size;
  return blocks <= worker.info.num_blocks();
}

RoutePlanner::RoutePlanner(RoutePlannerOptions options, const KvIndex* index)
    : options_(options), index_(index), rng_(std::random_device{}()) {}

const WorkerState* RoutePlanner::pickDecode(int64_t final_len,
                                            const std::vector<WorkerState>& workers,
                                            const std::map<std::string, int>& in_flight,
                                            const std::vector<std::string>& exclude,
                                            bool honour_exclude) {
  std::vector<const WorkerState*> best;
  int64_t best_load = 0;
  int best_free = 0;
  for (const WorkerState& w : workers) {
    if (!w.healthy || !w.has_info || !w.decodeCapable() || !fitsInCache(w, final_len)) continue;
    if (honour_exclude && std::find(exclude.begin(), exclude.end(), w.address) != exclude.end()) {
      continue;
    }
    const int64_t load = decodeLoad(w, in_flight);
    const int free = w.stats.num_free_blocks();
    if (best.empty() || load < best_load || (load == best_load && free > best_free)) {
      best = {&w};
      best_load = load;
      best_free = free;
    } else if (load == best_load && free == best_free) {
      best.push_back(&w);
    }
  }
  if (best.empty()) return nullptr;
  std::lock_guard lock(rng_mu_);
  return best[std::uniform_int_distribution<size_t>(0, best.size() - 1)(rng_)];
}

const WorkerState* RoutePlanner::pickPrefill(const std::vector<WorkerState>& workers) {
  const WorkerState* best = nullptr;
  for (const WorkerState& w : workers) {
    if (!w.healthy || !w.has_info || !w.prefillOnly()) continue;
    if (w.stats.num_prefill_tokens_queued() >= options_.max_prefill_queue_tokens) continue;
    if (best == nullptr ||
        w.stats.num_prefill_tokens_queued() < best->stats.num_prefill_tokens_queued() ||
        (w.stats.num_prefill_tokens_queued() == best->stats.num_prefill_tokens_queued() &&
         w.stats.num_running() + w.stats.num_waiting() <
             best->stats.num_running() + best->stats.num_waiting())) {
      best = &w;
    }
  }
  return best;
}

absl::StatusOr<RouteDecision> RoutePlanner::plan(std::span<const int32_t> prompt, int max_tokens,
                                                 const std::vector<WorkerState>& workers,
                                                 const std::map<std::string, int>& in_flight,
                                                 const std::vector<std::string>& exclude) {
  const int64_t final_len = static_cast<int64_t>(prompt.size()) + max_tokens;
  const WorkerState* d = pickDecode(final_len, workers, in_flight, exclude, true);
  if (d == nullptr) d = pickDecode(final_len, workers, in_flight, exclude, false);
  if (d == nullptr) return absl::UnavailableError("no healthy decode worker");
  RouteDecision decision;
  decision.decode_address = d->address;
  decision.block_size = std::max(1, d->info.block_size());
  if (index_ != nullptr) {
    const std::vector<kvcache::BlockHash> hashes = kvcache::blockHashes(prompt, decision.block_size);
    decision.cached_blocks = index_->leadingBlocks(d->address, hashes);
  }
  decision.uncached_tokens =
      static_cast<int>(prompt.size()) - decision.cached_blocks * decision.block_size;
  if (decision.uncached_tokens > options_.max_local_prefill_tokens) {
    if (const WorkerState* p = pickPrefill(workers); p != nullptr) {
      decision.prefill_address = p->address;
    }
  }
  return decision;
}

}  // namespace tandem::router::cluster
