#include "planner/local_connector.h"

#include <mutex>
#include <regex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/grpc/cluster_auth.h"
#include "gtest/gtest.h"
#include "planner/http_client.h"
#include "planner/load_sampler.h"
#include "common/prometheus_text.h"
#include "tests/test_paths.h"

namespace tandem::planner {
namespace {

using namespace std::chrono_literals;

constexpr char kSecret[] = "planner-local-connector-test-secret-0123456789";

bool waitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout = 60s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);
  }
  return done();
}

// a real `tandem router` (its ports learned from its "listening on" line),
// and local connectors whose real `tandem worker` processes register with it.
class LocalConnectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    process::SupervisorOptions options;
    options.forward_fd = -1;
    options.on_line = [this](const std::string& name, absl::string_view line) {
      static const std::regex kListening(R"(listening on http://[^:]+:(\d+) .*internal [^ ]*:(\d+))");
      std::cmatch m;
      if (std::regex_search(line.begin(), line.end(), m, kListening)) {
        std::lock_guard lock(mu_);
        http_port_ = std::stoi(m[1]);
        internal_port_ = std::stoi(m[2]);
      }
    };
    auto supervisor = process::Supervisor::create(std::move(options));
    ASSERT_TRUE(supervisor.ok());
    router_ = std::move(*supervisor);
    ASSERT_TRUE(router_
                    ->start({.name = "router",
                             .argv = {tandem::testing::tandemBinary(), "router", "--http-port", "0", "--grpc-port",
                                      "0", "--internal-port", "0", "--model", tandem::testing::storiesGguf()},
                             .extra_env = {absl::StrCat(grpc_util::kClusterSecretEnv, "=", kSecret)},
                             .restart = false})
                    .ok());
    ASSERT_TRUE(waitUntil([&] {
      std::lock_guard lock(mu_);
      return internal_port_ > 0;
    })) << "the router did not come up";
  }
  void TearDown() override { router_->stopAll(5s); }

  LocalConnectorOptions options() {
    std::lock_guard lock(mu_);
    LocalConnectorOptions o;
    o.tandem_binary = tandem::testing::tandemBinary();
    o.router_address = absl::StrCat("127.0.0.1:", internal_port_);
    o.model = tandem::testing::storiesGguf();
    o.worker_flags = {"--threads", "1"};
    o.env = {absl::StrCat(grpc_util::kClusterSecretEnv, "=", kSecret)};
    o.drain_timeout = 10s;
    return o;
  }
  // the healthy workers per role the router reports.
  RoleCounts routerSees() {
    int port;
    {
      std::lock_guard lock(mu_);
      port = http_port_;
    }
    absl::StatusOr<HttpReply> reply = httpCall({.url = absl::StrCat("http://127.0.0.1:", port, "/metrics")});
    if (!reply.ok() || reply->status != 200) return {-1, -1};
    absl::StatusOr<MetricsSnapshot> m = MetricsSnapshot::parse(reply->body);
    if (!m.ok()) return {-1, -1};
    return loadBetween(*m, *m, 0, 1, {})->ready;
  }

  std::mutex mu_;
  int http_port_ = 0;      // guarded by mu_
  int internal_port_ = 0;  // guarded by mu_
  process::SupervisorPtr router_;
};

TEST_F(LocalConnectorTest, StartsWorkersThatRegisterAndDrainsTheNewestOnScaleDown) {
  auto connector = LocalConnector::create(options());
  ASSERT_TRUE(connector.ok()) << connector.status();
  LocalConnector& c = **connector;
  ASSERT_TRUE(c.scale(Role::kDecode, 2).ok());
  ASSERT_TRUE(c.scale(Role::kPrefill, 1).ok());
  EXPECT_EQ(*c.current(), (RoleCounts{1, 2}));
  ASSERT_TRUE(waitUntil([&] { return routerSees() == RoleCounts{1, 2}; })) << "router sees " << routerSees().decode;

  ASSERT_TRUE(c.scale(Role::kDecode, 1).ok());
  ASSERT_TRUE(c.scale(Role::kPrefill, 0).ok());
  // at once: the workers being drained no longer count.
  EXPECT_EQ(*c.current(), (RoleCounts{0, 1}));
  EXPECT_EQ(c.workerNames(Role::kDecode), std::vector<std::string>{"decode-0"});
  // they leave routing and exit; the oldest decode worker stays.
  ASSERT_TRUE(waitUntil([&] { return c.draining() == 0; }));
  ASSERT_TRUE(waitUntil([&] { return routerSees() == RoleCounts{0, 1}; }));
  // scaling up again starts a new worker under a new name.
  ASSERT_TRUE(c.scale(Role::kDecode, 2).ok());
  EXPECT_EQ(c.workerNames(Role::kDecode), (std::vector<std::string>{"decode-0", "decode-2"}));
  ASSERT_TRUE(waitUntil([&] { return routerSees() == RoleCounts{0, 2}; }));
}

TEST_F(LocalConnectorTest, RefusesIncompleteOptions) {
  LocalConnectorOptions o = options();
  o.router_address.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(LocalConnector::create(o).status()));
  o = options();
  o.model.clear();
  EXPECT_TRUE(absl::IsInvalidArgument(LocalConnector::create(o).status()));
}

}  // namespace
}  // namespace tandem::planner
