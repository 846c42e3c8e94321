// The policies that ignore the KV cache, as baselines:
//   least_loaded  the fewest requests running and waiting (predicted: the
//                 router's own count at once, corrected by Stats), then the
//                 most free blocks, then at random;
//   round_robin   the next candidate in turn;
//   random        uniformly at random;
//   power_of_two  the less loaded (as least_loaded) of two at random.
#pragma once

#include <atomic>

#include "router/cluster/routing_policy.h"

namespace tandem::router::cluster {

class LeastLoadedPolicy : public RoutingPolicy {
 public:
  std::string_view name() const override { return "least_loaded"; }
  size_t choose(const RouteAsk& ask, std::span<const RouteCandidate> candidates,
                std::mt19937_64& rng) override;
};

class RoundRobinPolicy : public RoutingPolicy {
 public:
  std::string_view name() const override { return "round_robin"; }
  size_t choose(const RouteAsk& ask, std::span<const RouteCandidate> candidates,
                std::mt19937_64& rng) override;

 private:
  std::atomic<uint64_t> next_{0};
};

class RandomPolicy : public RoutingPolicy {
 public:
  std::string_view name() const override { return "random"; }
  size_t choose(const RouteAsk& ask, std::span<const RouteCandidate> candidates,
                std::mt19937_64& rng) override;
};

class PowerOfTwoPolicy : public RoutingPolicy {
 public:
  std::string_view name() const override { return "power_of_two"; }
  size_t choose(const RouteAsk& ask, std::span<const RouteCandidate> candidates,
                std::mt19937_64& rng) override;
};

}  // namespace tandem::router::cluster
