// The router's threads do not grow with the workers it fronts: `tandem
// serve` with 16 decode workers runs its router on the same threads as
// with 1 (KV subscriptions, worker polls and the registry are asynchronous
// calls on completion queues drained by fixed threads; the pool opens new
// channels a few at a time). gRPC's own thread pools are counted apart:
// gRPC core adds threads to them when work queues up (a burst at startup),
// its default executor at most 2 per core, and never gives one back, so
// their size follows the machine and the moment, not the workers.
#include <sys/types.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/cli/serve_process.h"

namespace tandem {
namespace {

// the names gRPC (1.51) gives its threads, as /proc/<pid>/task/*/comm
// shows them (cut at 15 characters).
const std::set<std::string>& grpcThreadNames() {
  static const std::set<std::string> names = {
      "default-executo", "resolver-execut", "event_engine",   "grpc_global_tim",
      "timer_manager",   "nexting_thread",  "grpcpp_sync_ser"};
  return names;
}

struct RouterThreads {
  int own = 0;            // tandem's own threads: every one gRPC did not start
  int grpc = 0;           // gRPC's pools
  int grpc_executor = 0;  // of which gRPC's default executor
  std::map<std::string, int> by_name;
};

RouterThreads threadsOf(pid_t pid) {
  RouterThreads threads;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name.empty()) continue;  // the thread exited since the listing
    ++threads.by_name[name];
    ++(grpcThreadNames().contains(name) ? threads.grpc : threads.own);
    if (name == "default-executo") ++threads.grpc_executor;
  }
  return threads;
}

std::string describe(const RouterThreads& threads) {
  std::string out = std::to_string(threads.own + threads.grpc) + " threads: ";
  for (const auto& [name, n] : threads.by_name) out += name + " x" + std::to_string(n) + ", ";
  return out;
}

// `tandem serve` with one prefill worker and `decode` decode workers (one
// compute thread each, small batches), once every worker is healthy in the
// router's gauges: its router's threads.
RouterThreads routerThreadsWith(int decode) {
  auto serve = testing::ServeProcess::start(
      {"--prefill-workers", "1", "--decode-workers", std::to_string(decode), "--threads",
       std::to_string(decode + 1), "--max-num-seqs", "2"},
      std::chrono::seconds(300));
  EXPECT_TRUE(serve.ok()) << serve.status();
  if (!serve.ok()) return {};
  testing::ServeProcess& s = **serve;
  const std::string healthy_decode =
      "tandem:router_workers{role=\"decode\",state=\"healthy\"} " + std::to_string(decode);
  const std::string healthy_prefill = "tandem:router_workers{role=\"prefill\",state=\"healthy\"} 1";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  bool all_healthy = false;
  while (!all_healthy && std::chrono::steady_clock::now() < deadline) {
    auto metrics = s.get("/metrics");
    all_healthy = metrics.has_value() && metrics->body.find(healthy_decode) != std::string::npos &&
                  metrics->body.find(healthy_prefill) != std::string::npos;
    if (!all_healthy) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(all_healthy) << "not every worker became healthy";
  const pid_t router = testing::childWith(s.pid(), " router");
  EXPECT_NE(router, 0);
  return router == 0 ? RouterThreads{} : threadsOf(router);
}

TEST(ServeThreadsTest, TheRoutersThreadsDoNotGrowWithItsWorkers) {
  const RouterThreads one = routerThreadsWith(1);
  const RouterThreads sixteen = routerThreadsWith(16);
  ASSERT_GT(one.own, 0);
  std::printf("router threads, 1 decode worker: %s\n16 decode workers: %s\n", describe(one).c_str(),
              describe(sixteen).c_str());
  EXPECT_LE(sixteen.own, one.own + 2) << "1 decode worker: " << describe(one)
                                      << "\n16 decode workers: " << describe(sixteen);
  // gRPC's default executor stays within the bound gRPC core gives it.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  EXPECT_LE(sixteen.grpc_executor, 2 * cores) << describe(sixteen);
}

}  // namespace
}  // namespace tandem
