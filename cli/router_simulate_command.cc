// `tandem router simulate`: replays a trace through the router's routing
// code against simulated workers in virtual time, per policy, and writes
// the JSON summary (bench/router_sim/router_simulator.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "bench/router_sim/router_simulator.h"
#include "bench/router_sim/sim_trace.h"
#include "cli/command.h"
#include "common/mapped_file.h"
#include "router/cluster/routing_policy.h"

namespace tandem::cli {
namespace {

struct RouterSimulateArgs {
  std::string trace;
  bench::RouterSimOptions options;
  int block_size = 16;
  std::string json_out;
  std::string plot_out;
};

absl::Status runRouterSimulate(const RouterSimulateArgs& args) {
  absl::StatusOr<bench::SimTrace> trace = bench::loadSimTrace(args.trace, args.block_size);
  if (!trace.ok()) return trace.status();
  absl::StatusOr<bench::RouterSimResult> result = bench::simulateRouter(*trace, args.block_size, args.options);
  if (!result.ok()) return result.status();
  std::fprintf(stderr, "%s: %lld requests, %lld distinct blocks, %lld blocks per worker; oracle hit rate %.3f\n",
               args.trace.c_str(), static_cast<long long>(result->requests),
               static_cast<long long>(trace->distinct_blocks), static_cast<long long>(result->capacity_blocks),
               result->oracle_hit_rate);
  std::fprintf(stderr, "%-14s %8s %12s %12s %12s %10s %9s %7s\n", "policy", "hit", "ttft_p50_ms", "ttft_p99_ms",
               "e2e_p99_ms", "imbalance", "rejected", "wall_s");
  for (const bench::PolicyResult& p : result->policies) {
    std::fprintf(stderr, "%-14s %8.3f %12.1f %12.1f %12.1f %10.3f %9lld %7.1f\n", p.policy.c_str(), p.hit_rate,
                 p.ttft_p50_ms, p.ttft_p99_ms, p.e2e_p99_ms, p.imbalance, static_cast<long long>(p.rejected),
                 p.wall_s);
  }
  if (absl::Status s = writeFile(args.json_out, result->toJson().dump(2) + "\n"); !s.ok()) return s;
  if (!args.plot_out.empty()) return writeFile(args.plot_out, result->toSvg());
  return absl::OkStatus();
}

}  // namespace

void registerRouterSimulateCommand(CLI::App* router) {
  auto args = std::make_shared<RouterSimulateArgs>();
  CLI::App* cmd = router->add_subcommand(
      "simulate", "replay a trace through the router's policies against simulated workers (virtual time)");
  cmd->add_option("--trace", args->trace, "mooncake:FILE (JSONL) or azure:FILE (CSV)")->required();
  cmd->add_option("--workers", args->options.workers, "simulated workers")->capture_default_str();
  CLI::Option* fraction = cmd->add_option("--kv-capacity-fraction", args->options.kv_capacity_fraction,
                  "each worker's KV capacity as a fraction of the trace's distinct blocks")
      ->capture_default_str();
  cmd->add_option("--kv-capacity-blocks", args->options.capacity_blocks,
                  "each worker's KV capacity in blocks (instead of the fraction)")
      ->excludes(fraction);
  cmd->add_option("--policies", args->options.policies, "policies to compare (comma-separated)")
      ->delimiter(',')
      ->check(CLI::IsMember(router::cluster::routingPolicyNames()))
      ->capture_default_str();
  cmd->add_option("--block-size", args->block_size, "tokens a KV block")->capture_default_str();
  cmd->add_option("--speedup", args->options.speedup, "replay the arrivals this many times faster")
      ->capture_default_str();
  cmd->add_option("--prefill-tokens-per-s", args->options.prefill_tokens_per_s,
                  "each worker's prefill rate")->capture_default_str();
  cmd->add_option("--decode-ms-per-step", args->options.decode_ms_per_step,
                  "a decode step of a batch of one (grows with the batch)")->capture_default_str();
  cmd->add_option("--seed", args->options.seed, "seeds the policies' random choices")->capture_default_str();
  cmd->add_option("--jobs", args->options.jobs, "policies simulated at once (0 = one per core)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--json", args->json_out, "write the results here (JSON)")->required();
  cmd->add_option("--plot", args->plot_out, "an SVG of hit rate and TTFT p99 per policy");
  setAction(cmd, [args] { return runRouterSimulate(*args); });
}

}  // namespace tandem::cli
