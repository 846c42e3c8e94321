// How the route planner picks one worker among candidates: the interface
// every policy implements, what it sees of each candidate, and the cost
// model they share (estimateTtft). Policies (`tandem router --policy`):
//   kv            the least predicted TTFT (queued prefill work + this
//                 prompt's uncached tokens at the worker's learned rate, host
//                 and disk hits at their onboarding cost, + the KV transfer
//                 of a remote prefill) plus the decode slowdown it causes;
//                 ties at random, softmax sampling with a temperature.
//   dynamo        Dynamo's published cost: overlap_weight x prefill blocks
//                 (uncached, with tier credits 1.0/0.75/0.25 for device/
//                 host/disk hits, + queued) + active decode blocks.
//   least_loaded  the fewest requests running and waiting (then the most
//                 free blocks, then at random).
//   round_robin, random, power_of_two (the less loaded of two at random).
#pragma once

#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "router/cluster/kv_index.h"
#include "router/cluster/worker_load_model.h"

namespace tandem::router::cluster {

// how a decision relates to the cache.
enum class RouteOutcome {
  kCacheHit,  // the prefilling worker holds some of the prompt
  kSpread,    // another worker held some, the policy chose one that did not (load)
  kCold,      // no worker held any of it
};

struct RoutingCosts {
  // seconds to bring one block from host / disk into device memory.
  double host_onboard_s_per_block = 0.0002;
  double disk_onboard_s_per_block = 0.002;
  // seconds to send one block from a prefill worker to the decode worker.
  double transfer_s_per_block = 0.0002;
  // kv: weight of the decode slowdown (seconds of the new request's and
  // the running ones' extra decode time) against the TTFT.
  double decode_weight = 1.0;
  // kv, dynamo: softmax temperature over the costs (0 = the best, ties at random).
  double temperature = 0;
  // dynamo: weight of the prefill blocks against the decode blocks.
  double overlap_weight = 1.0;
};

// one worker the policy may pick.
struct RouteCandidate {
  const std::string* address = nullptr;
  TierMatch cached;            // leading prompt blocks it holds, per tier
  WorkerLoad load;             // predicted
  int64_t num_blocks = 0;      // KV capacity (0 = unknown)
  int64_t free_blocks = 0;     // last reported
  // blocks that must be sent to it after a remote prefill (0: it prefills).
  int64_t transfer_blocks = 0;
};

struct RouteAsk {
  int64_t prompt_tokens = 0;
  int64_t prompt_blocks = 0;  // full blocks of the prompt (its hash chain)
  int block_size = 1;
  int max_tokens = 0;
};

// the predicted time to the first token at `c`, in seconds.
double estimateTtft(const RouteAsk& ask, const RouteCandidate& c, const RoutingCosts& costs);
// prompt tokens `c` would not find on any tier.
int64_t uncachedTokens(const RouteAsk& ask, const RouteCandidate& c);

class RoutingPolicy {
 public:
  virtual ~RoutingPolicy() = default;
  virtual std::string_view name() const = 0;
  // the index of the chosen candidate (candidates is not empty).
  virtual size_t choose(const RouteAsk& ask, std::span<const RouteCandidate> candidates,
                        std::mt19937_64& rng) = 0;
};

// a policy that scores every candidate with cost() and picks by
// pickByCost (least cost, ties at random; softmax with a temperature).
class CostPolicy : public RoutingPolicy {
 public:
  explicit CostPolicy(RoutingCosts costs) : costs_(costs) {}
  size_t choose(const RouteAsk& ask, std::span<const RouteCandidate> candidates,
                std::mt19937_64& rng) final;
  virtual double cost(const RouteAsk& ask, const RouteCandidate& c) const = 0;

 protected:
  const RoutingCosts costs_;
};

// the policy called `name` (InvalidArgument naming the known ones else).
absl::StatusOr<std::unique_ptr<RoutingPolicy>> makeRoutingPolicy(std::string_view name,
                                                                  const RoutingCosts& costs);
// the names makeRoutingPolicy knows, in the order above.
const std::vector<std::string>& routingPolicyNames();

// the index of the least `cost` (ties at random), or with temperature > 0
// a softmax sample over -cost / (temperature x the costs' spread).
size_t pickByCost(std::span<const double> cost, double temperature, std::mt19937_64& rng);

}  // namespace tandem::router::cluster
