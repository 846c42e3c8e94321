#include "router/cluster/worker_pool.h"

#include <algorithm>
#include <fstream>
#include <thread>

#include "gtest/gtest.h"
#include "router/cluster/registry_server.h"
#include "router/cluster/worker_discovery.h"
#include "tests/common/tls/test_pki.h"
#include "tests/router/cluster/fake_worker.h"
#include "tests/test_paths.h"

namespace tandem::router::cluster {
namespace {

using namespace std::chrono_literals;
using testing::FakeWorker;
using testing::FakeWorkerConfig;
using testing::waitFor;

WorkerPoolOptions fastOptions() {
  WorkerPoolOptions o;
  o.poll_interval = 30ms;
  o.rpc_deadline = 300ms;
  o.failures_to_unhealthy = 3;
  o.drop_after = 400ms;
  return o;
}

std::optional<WorkerState> find(const WorkerPool& pool, const std::string& address) {
  for (const WorkerState& w : pool.snapshot()) {
    if (w.address == address) return w;
  }
  return std::nullopt;
}

// the router's side: a Registry server over the pool, and a client to it.
class WorkerPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_.start();
    absl::StatusOr<RegistryServerPtr> registry = RegistryServer::start({}, &pool_);
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = std::move(*registry);
    registry_stub_ = tandem::v1::Registry::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(registry_->port()), grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    if (registry_ != nullptr) registry_->shutdown(std::chrono::seconds(5));
    pool_.stop();
  }
  grpc::Status registerWorker(const tandem::v1::WorkerInfo& info, int* heartbeat = nullptr) {
    grpc::ClientContext context;
    tandem::v1::RegisterResponse response;
    grpc::Status status = registry_stub_->Register(&context, info, &response);
    if (heartbeat != nullptr) *heartbeat = response.heartbeat_interval_ms();
    return status;
  }

  WorkerPool pool_{fastOptions(), nullptr};
  RegistryServerPtr registry_;
  std::unique_ptr<tandem::v1::Registry::Stub> registry_stub_;
};

TEST_F(WorkerPoolTest, RegisteredWorkerIsHealthyAndItsStatsArePolled) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  worker.setStats(3, 2, 700, 0);
  int heartbeat = 0;
  ASSERT_TRUE(registerWorker(worker.info(), &heartbeat).ok());
  EXPECT_EQ(heartbeat, fastOptions().heartbeat_interval_ms);
  std::optional<WorkerState> w = find(pool_, worker.address());
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->healthy);
  EXPECT_EQ(w->sources, kRegistered);
  EXPECT_EQ(w->info.role(), tandem::v1::WORKER_ROLE_DECODE);
  ASSERT_TRUE(waitFor([&] {
    auto s = find(pool_, worker.address());
    return s && s->has_stats && s->stats.num_running() == 3;
  }));
  w = find(pool_, worker.address());
  EXPECT_EQ(w->stats.num_waiting(), 2);
  EXPECT_EQ(w->stats.num_free_blocks(), 700);
}

TEST_F(WorkerPoolTest, RejectsARegistrationWithoutAnIdOrRole) {
  tandem::v1::WorkerInfo info;
  info.set_address("127.0.0.1:1");
  info.set_role(tandem::v1::WORKER_ROLE_DECODE);
  EXPECT_EQ(registerWorker(info).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  info.set_worker_id("x");
  info.set_role(static_cast<tandem::v1::WorkerRole>(42));  // a role it does not know
  EXPECT_EQ(registerWorker(info).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(pool_.snapshot().empty());
}

TEST_F(WorkerPoolTest, FailedPollsMakeARegisteredWorkerUnhealthyThenDropIt) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  ASSERT_TRUE(registerWorker(worker.info()).ok());
  worker.fail_stats = true;
  ASSERT_TRUE(waitFor([&] {
    auto s = find(pool_, worker.address());
    return s && !s->healthy;
  }));
  // still listed until drop_after, then gone.
  ASSERT_TRUE(waitFor([&] { return !find(pool_, worker.address()).has_value(); }));
}

TEST_F(WorkerPoolTest, UnhealthyWorkerRecoversWhenItAnswersAgain) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  ASSERT_TRUE(registerWorker(worker.info()).ok());
  worker.fail_stats = true;
  ASSERT_TRUE(waitFor([&] { return !find(pool_, worker.address())->healthy; }));
  worker.fail_stats = false;
  ASSERT_TRUE(waitFor([&] { return find(pool_, worker.address())->healthy; }));
}

TEST_F(WorkerPoolTest, ReRegistrationWithANewIdReplacesTheWorker) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  worker.setStats(4, 0, 10);
  ASSERT_TRUE(registerWorker(worker.info()).ok());
  ASSERT_TRUE(waitFor([&] { return find(pool_, worker.address())->has_stats; }));
  worker.restartAs("w1-restarted");
  worker.setStats(0, 0, 1000);
  ASSERT_TRUE(registerWorker(worker.info()).ok());
  std::optional<WorkerState> w = find(pool_, worker.address());
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->info.worker_id(), "w1-restarted");
  // the old incarnation's stats (10 free blocks) are gone; the poller may
  // already have the new one's.
  EXPECT_TRUE(!w->has_stats || w->stats.num_free_blocks() == 1000) << w->stats.num_free_blocks();
  EXPECT_EQ(pool_.snapshot().size(), 1u);
  ASSERT_TRUE(waitFor([&] {
    auto s = find(pool_, worker.address());
    return s->has_stats && s->stats.num_free_blocks() == 1000;
  }));
}

TEST_F(WorkerPoolTest, DeregisterRemovesTheWorker) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  ASSERT_TRUE(registerWorker(worker.info()).ok());
  grpc::ClientContext context;
  tandem::v1::DeregisterRequest request;
  request.set_worker_id("w1");
  tandem::v1::DeregisterResponse response;
  ASSERT_TRUE(registry_stub_->Deregister(&context, request, &response).ok());
  EXPECT_TRUE(pool_.snapshot().empty());
}

// scale-down: a worker that drains stays, answering, but takes nothing new;
// its final Deregister removes it.
TEST_F(WorkerPoolTest, ADrainingDeregisterKeepsTheWorkerButNotRoutable) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  ASSERT_TRUE(registerWorker(worker.info()).ok());
  auto deregister = [&](bool draining) {
    grpc::ClientContext context;
    tandem::v1::DeregisterRequest request;
    request.set_worker_id("w1");
    request.set_draining(draining);
    tandem::v1::DeregisterResponse response;
    return registry_stub_->Deregister(&context, request, &response);
  };
  ASSERT_TRUE(deregister(/*draining=*/true).ok());
  std::optional<WorkerState> w = find(pool_, worker.address());
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->healthy);
  EXPECT_TRUE(w->draining);
  EXPECT_FALSE(w->routable());
  // a heartbeat that raced the drain does not undo it; polls keep it healthy.
  ASSERT_TRUE(registerWorker(worker.info()).ok());
  pool_.pollOnce();
  w = find(pool_, worker.address());
  EXPECT_TRUE(w->healthy && w->draining);
  ASSERT_TRUE(deregister(/*draining=*/false).ok());
  EXPECT_TRUE(pool_.snapshot().empty());
}

// a listed worker says it drains in its Stats; discovery dropping it (its
// readiness failed) keeps it while it answers, and drops it once it stops.
TEST_F(WorkerPoolTest, AListedWorkerDrainingThroughItsStatsIsKeptUntilItStopsAnswering) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  pool_.setDiscovered(kDns, {worker.address()});
  ASSERT_TRUE(waitFor([&] { return find(pool_, worker.address())->routable(); }));
  worker.draining = true;
  ASSERT_TRUE(waitFor([&] { return find(pool_, worker.address())->draining; }));
  pool_.setDiscovered(kDns, {});
  pool_.pollOnce();
  std::optional<WorkerState> w = find(pool_, worker.address());
  ASSERT_TRUE(w.has_value());
  EXPECT_TRUE(w->healthy);
  EXPECT_FALSE(w->routable());
  worker.fail_stats = true;  // it left routing (idle or past its drain deadline)
  ASSERT_TRUE(waitFor([&] { return !find(pool_, worker.address()).has_value(); }));
}

// a fake or broken worker must not steer routing: a negative load would
// attract every request.
TEST_F(WorkerPoolTest, AWorkerReportingImpossibleStatsIsNotHealthy) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  worker.setStats(-5, 0, 700);
  ASSERT_TRUE(registerWorker(worker.info()).ok());
  ASSERT_TRUE(waitFor([&] {
    auto s = find(pool_, worker.address());
    return s && !s->healthy;
  }));
  EXPECT_FALSE(find(pool_, worker.address())->has_stats);
  // more free blocks than blocks.
  worker.setStats(0, 0, 1001);
  for (int i = 0; i < 3; ++i) pool_.pollOnce();
  EXPECT_FALSE(find(pool_, worker.address())->healthy);
  worker.setStats(0, 0, 700);
  ASSERT_TRUE(waitFor([&] { return find(pool_, worker.address())->healthy; }));
}

// polls overlap (the poller's and one on demand): an answer that arrives
// after a later poll's was applied is stale and is dropped.
TEST(WorkerPoolOrderTest, AnOverlappingPollsOlderAnswerDoesNotReplaceANewerOne) {
  FakeWorker worker(FakeWorkerConfig{});
  worker.start();
  worker.setStats(0, 0, 700, 10000);
  WorkerPool pool(fastOptions(), nullptr);  // not started: no poller, polls only here
  ASSERT_TRUE(pool.registerWorker(worker.info()).ok());
  worker.holdStats(true);
  std::thread older([&] { pool.pollOnce(); });
  ASSERT_TRUE(waitFor([&] { return worker.heldStats() == 1; }));
  worker.setStats(0, 0, 700, 0);
  worker.holdStats(false);
  pool.pollOnce();  // the newer poll's answer (0) is applied first
  worker.releaseStats();  // then the older one's (10000) arrives
  older.join();
  EXPECT_EQ(find(pool, worker.address())->stats.num_prefill_tokens_queued(), 0);
}

// `n` started fake workers that hold their Stats answers, registered with `pool`.
void addHoldingWorkers(WorkerPool& pool, int n, std::vector<std::unique_ptr<FakeWorker>>* workers) {
  for (int i = 0; i < n; ++i) {
    workers->push_back(std::make_unique<FakeWorker>(FakeWorkerConfig{.worker_id = "w" + std::to_string(i)}));
    workers->back()->start();
    workers->back()->holdStats(true);
    ASSERT_TRUE(pool.registerWorker(workers->back()->info()).ok());
  }
}

// the Stats calls they hold, over all of them.
int heldStats(const std::vector<std::unique_ptr<FakeWorker>>& workers) {
  int n = 0;
  for (const auto& w : workers) n += w->heldStats();
  return n;
}

// a round in front of many workers polls them in waves: with 2 calls
// allowed out, 4 workers that hold their answers see 2 calls, the other
// 2 only once those were answered, and the round ends after all 4.
TEST(WorkerPoolWavesTest, ARoundKeepsAtMostMaxPollsInFlightCallsOut) {
  std::vector<std::unique_ptr<FakeWorker>> workers;
  WorkerPoolOptions options = fastOptions();
  options.rpc_deadline = 60s;  // held answers must not time out
  options.max_polls_in_flight = 2;
  WorkerPool pool(options, nullptr);  // not started: polls only here
  ASSERT_NO_FATAL_FAILURE(addHoldingWorkers(pool, 4, &workers));
  auto held = [&] { return heldStats(workers); };
  std::atomic<bool> round_ended{false};
  std::thread round([&] {
    pool.pollOnce();
    round_ended = true;
  });
  ASSERT_TRUE(waitFor([&] { return held() >= 2; }));
  EXPECT_EQ(held(), 2);
  std::vector<FakeWorker*> first;
  for (const auto& w : workers) {
    if (w->heldStats() == 1) first.push_back(w.get());
  }
  ASSERT_EQ(first.size(), 2u);
  for (FakeWorker* w : first) {
    w->holdStats(false);
    w->releaseStats();
  }
  // the other two, once slots were free.
  ASSERT_TRUE(waitFor([&] { return held() == 2; }));
  for (FakeWorker* w : first) EXPECT_EQ(w->heldStats(), 0);
  EXPECT_FALSE(round_ended);
  for (const auto& w : workers) {
    w->holdStats(false);
    w->releaseStats();
  }
  round.join();
  for (const auto& w : workers) EXPECT_TRUE(find(pool, w->address())->has_stats) << w->address();
}

// new channels are opened a few at a time: with one first contact allowed
// out, the first round reaches 3 new workers one after another; the next
// round, on connected channels, calls all 3 at once.
TEST(WorkerPoolWavesTest, ARoundOpensAtMostMaxFirstContactsNewChannelsAtOnce) {
  std::vector<std::unique_ptr<FakeWorker>> workers;
  WorkerPoolOptions options = fastOptions();
  options.rpc_deadline = 60s;  // held answers must not time out
  options.max_polls_in_flight = 8;
  options.max_first_contacts = 1;
  WorkerPool pool(options, nullptr);  // not started: polls only here
  ASSERT_NO_FATAL_FAILURE(addHoldingWorkers(pool, 3, &workers));
  auto held = [&] { return heldStats(workers); };
  std::thread round([&] { pool.pollOnce(); });
  for (int answered = 0; answered < 3; ++answered) {
    ASSERT_TRUE(waitFor([&] { return held() == 1; })) << "held " << held() << " after " << answered;
    // only the one held now: the next may arrive while this one is released
    auto one = std::find_if(workers.begin(), workers.end(), [](const auto& w) { return w->heldStats() == 1; });
    ASSERT_NE(one, workers.end());
    (*one)->releaseStats();
  }
  round.join();
  std::thread next([&] { pool.pollOnce(); });
  ASSERT_TRUE(waitFor([&] { return held() == 3; }));
  for (const auto& w : workers) {
    w->holdStats(false);
    w->releaseStats();
  }
  next.join();
  for (const auto& w : workers) EXPECT_TRUE(find(pool, w->address())->has_stats) << w->address();
}

// the pool's calls to workers carry the cluster secret: a worker requiring
// it stays healthy only when the router has it.
TEST(WorkerPoolAuthTest, PollsCarryTheClusterSecret) {
  const std::string secret = "0123456789abcdef0123456789abcdef";
  absl::StatusOr<grpc_util::ClusterAuthPtr> auth = grpc_util::ClusterAuth::create({.secret = secret});
  ASSERT_TRUE(auth.ok());
  FakeWorker worker(FakeWorkerConfig{.auth = *auth});
  worker.start();
  WorkerPoolOptions options = fastOptions();
  options.auth = *auth;
  WorkerPool with_secret(options, nullptr);
  WorkerPool without(fastOptions(), nullptr);
  for (WorkerPool* pool : {&with_secret, &without}) {
    pool->setDiscovered(kStaticList, {worker.address()});
    for (int i = 0; i < 3; ++i) pool->pollOnce();  // Info, then Stats
  }
  std::optional<WorkerState> w = find(with_secret, worker.address());
  EXPECT_TRUE(w->healthy);
  EXPECT_EQ(w->info.worker_id(), "w1");
  w = find(without, worker.address());
  EXPECT_FALSE(w->healthy);
  EXPECT_FALSE(w->has_info);
}

// the cluster's mutual TLS moves from an old CA to a new one: both sides'
// files are replaced and reloaded (SIGHUP), then the worker restarts on the
// same port. The pool's polls reach it only over a new channel with the new
// certificate (its old channel would reconnect with the old one and be
// refused).
TEST(WorkerPoolAuthTest, AfterATlsReloadPollsUseTheNewCertificate) {
  using tls::testing::readFile;
  using tls::testing::writeFile;
  tls::testing::TestPki old_pki("old cluster CA");
  tls::testing::TestPki new_pki("new cluster CA");
  const std::string dir = tandem::testing::makeTempDir();
  // writes `name`'s cluster files (certificate, key, CA) from `pki` and
  // returns their options.
  const auto install = [&](const std::string& name, tls::testing::TestPki& pki, long serial) {
    const tls::testing::TestCert cert = pki.issue(name, serial, name);
    grpc_util::ClusterAuthOptions o{.tls_cert_file = dir + "/" + name + ".pem",
                                    .tls_key_file = dir + "/" + name + ".key",
                                    .tls_ca_file = dir + "/" + name + "-ca.pem"};
    writeFile(o.tls_cert_file, readFile(cert.cert_file));
    writeFile(o.tls_key_file, readFile(cert.key_file));
    writeFile(o.tls_ca_file, readFile(pki.caFile()));
    return o;
  };
  absl::StatusOr<grpc_util::ClusterAuthPtr> router_auth =
      grpc_util::ClusterAuth::create(install("router", old_pki, 1));
  absl::StatusOr<grpc_util::ClusterAuthPtr> worker_auth =
      grpc_util::ClusterAuth::create(install("worker", old_pki, 2));
  ASSERT_TRUE(router_auth.ok()) << router_auth.status();
  ASSERT_TRUE(worker_auth.ok()) << worker_auth.status();
  FakeWorker worker(FakeWorkerConfig{.auth = *worker_auth});
  worker.start();
  WorkerPoolOptions options = fastOptions();
  options.auth = *router_auth;
  WorkerPool pool(options, nullptr);
  pool.setDiscovered(kStaticList, {worker.address()});
  ASSERT_TRUE(waitFor([&] {
    pool.pollOnce();
    return find(pool, worker.address())->has_stats;
  }));

  install("router", new_pki, 3);
  install("worker", new_pki, 4);
  ASSERT_TRUE((*router_auth)->reloadTls().ok());
  ASSERT_TRUE((*worker_auth)->reloadTls().ok());
  worker.shutdown();
  worker.start();
  worker.setStats(7, 0, 100);
  EXPECT_TRUE(waitFor([&] {
    pool.pollOnce();
    return find(pool, worker.address())->stats.num_running() == 7;
  }));
}

// once the router serves a model, a listed worker of another one is never
// used, and registered ones are dropped and refused.
TEST_F(WorkerPoolTest, WorkersOfAnotherModelAreNotUsedOnceAModelIsServed) {
  FakeWorker listed(FakeWorkerConfig{.worker_id = "l1", .model_name = "other"});
  FakeWorker registered(FakeWorkerConfig{.worker_id = "r1", .model_name = "other"});
  listed.start();
  registered.start();
  pool_.setDiscovered(kStaticList, {listed.address()});
  ASSERT_TRUE(registerWorker(registered.info()).ok());
  ASSERT_TRUE(waitFor([&] { return find(pool_, listed.address())->healthy; }));
  pool_.setModelName("fake");
  EXPECT_FALSE(find(pool_, registered.address()).has_value());
  EXPECT_EQ(registerWorker(registered.info()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  for (int i = 0; i < 3; ++i) pool_.pollOnce();
  EXPECT_FALSE(find(pool_, listed.address())->healthy);
  EXPECT_FALSE(find(pool_, listed.address())->has_info);
}

TEST_F(WorkerPoolTest, StaticWorkerIsLearnedThroughInfoAndNeverDropped) {
  FakeWorkerConfig config;
  config.role = "prefill";
  FakeWorker worker(config);
  worker.start();
  pool_.setDiscovered(kStaticList, {worker.address()});
  ASSERT_TRUE(waitFor([&] { return find(pool_, worker.address())->healthy; }));
  std::optional<WorkerState> w = find(pool_, worker.address());
  EXPECT_EQ(w->info.worker_id(), "w1");
  EXPECT_EQ(w->info.role(), tandem::v1::WORKER_ROLE_PREFILL);
  worker.fail_stats = true;
  ASSERT_TRUE(waitFor([&] { return !find(pool_, worker.address())->healthy; }));
  std::this_thread::sleep_for(fastOptions().drop_after + 200ms);
  ASSERT_TRUE(find(pool_, worker.address()).has_value());
  worker.fail_stats = false;
  ASSERT_TRUE(waitFor([&] { return find(pool_, worker.address())->healthy; }));
}

TEST_F(WorkerPoolTest, WorkersFileIsReReadAndItsChangesApplied) {
  FakeWorker a(FakeWorkerConfig{.worker_id = "a"});
  FakeWorker b(FakeWorkerConfig{.worker_id = "b"});
  a.start();
  b.start();
  const std::string path = tandem::testing::makeTempDir() + "/workers";
  std::ofstream(path) << "# workers\n" << a.address() << "\n\n";
  WorkerDiscoveryOptions options;
  options.workers_file = path;
  options.file_interval = 30ms;
  WorkerDiscovery discovery(options, &pool_);
  ASSERT_TRUE(discovery.start().ok());
  ASSERT_TRUE(waitFor([&] {
    auto s = find(pool_, a.address());
    return s && s->healthy && s->info.worker_id() == "a";
  }));
  std::ofstream(path) << b.address() << "\n";
  ASSERT_TRUE(waitFor([&] {
    auto s = find(pool_, b.address());
    return s && s->healthy && !find(pool_, a.address()).has_value();
  }));
  discovery.stop();
  std::remove(path.c_str());
}

TEST(WorkerDiscoveryTest, ReadsAddressesSkippingCommentsAndBlanks) {
  const std::string path = tandem::testing::makeTempDir() + "/workers";
  std::ofstream(path) << "# comment\n  10.0.0.1:7000  \n\n10.0.0.2:7000\n10.0.0.1:7000\n";
  absl::StatusOr<std::vector<std::string>> addresses = readWorkersFile(path);
  ASSERT_TRUE(addresses.ok());
  EXPECT_EQ(*addresses, (std::vector<std::string>{"10.0.0.1:7000", "10.0.0.2:7000"}));
  std::remove(path.c_str());
  EXPECT_TRUE(absl::IsNotFound(readWorkersFile(path).status()));
}

TEST(WorkerDiscoveryTest, ResolvesEveryAddressOfADnsName) {
  absl::StatusOr<std::vector<std::string>> addresses = resolveWorkersDns("127.0.0.1:7001");
  ASSERT_TRUE(addresses.ok()) << addresses.status();
  EXPECT_EQ(*addresses, std::vector<std::string>{"127.0.0.1:7001"});
  absl::StatusOr<std::vector<std::string>> local = resolveWorkersDns("localhost:7001");
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_NE(std::find(local->begin(), local->end(), "127.0.0.1:7001"), local->end());
  EXPECT_TRUE(absl::IsInvalidArgument(resolveWorkersDns("localhost").status()));
}

TEST(WorkerPoolMetricsTest, CountsWorkersByRoleAndHealth) {
  prometheus::Registry registry;
  ClusterMetrics metrics(registry);
  WorkerPool pool(fastOptions(), &metrics);
  tandem::v1::WorkerInfo info = FakeWorker(FakeWorkerConfig{.worker_id = "d1"}).info();
  info.set_address("127.0.0.1:1");
  ASSERT_TRUE(pool.registerWorker(info).ok());
  double healthy = -1;
  for (const auto& family : registry.Collect()) {
    if (family.name != "tandem:router_workers") continue;
    for (const auto& m : family.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      if (labels["role"] == "decode" && labels["state"] == "healthy") healthy = m.gauge.value;
    }
  }
  EXPECT_EQ(healthy, 1);
}

// the value of gauge `name` with label role=`role`; -1 when absent.
double roleGauge(prometheus::Registry& registry, const std::string& name, const std::string& role) {
  for (const auto& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      for (const auto& l : m.label) {
        if (l.name == "role" && l.value == role) return m.gauge.value;
      }
    }
  }
  return -1;
}

TEST(WorkerPoolMetricsTest, SumsTheLoadOfHealthyWorkersPerRole) {
  prometheus::Registry registry;
  ClusterMetrics metrics(registry);
  WorkerPool pool(fastOptions(), &metrics);
  FakeWorker d1(FakeWorkerConfig{.worker_id = "d1"});
  FakeWorker d2(FakeWorkerConfig{.worker_id = "d2"});
  FakeWorker p1(FakeWorkerConfig{.worker_id = "p1", .role = "prefill"});
  d1.start();
  d2.start();
  p1.start();
  d1.setStats(3, 2, 900);
  d2.setStats(1, 4, 900);
  p1.setStats(0, 1, 900, 4096);
  for (FakeWorker* w : {&d1, &d2, &p1}) ASSERT_TRUE(pool.registerWorker(w->info()).ok());
  pool.start();
  ASSERT_TRUE(waitFor([&] {
    return roleGauge(registry, "tandem:router_role_requests_waiting", "decode") == 6 &&
           roleGauge(registry, "tandem:router_role_prefill_tokens_queued", "prefill") == 4096;
  }));
  EXPECT_EQ(roleGauge(registry, "tandem:router_role_requests_running", "decode"), 4);
  EXPECT_EQ(roleGauge(registry, "tandem:router_role_requests_waiting", "prefill"), 1);
  EXPECT_EQ(roleGauge(registry, "tandem:router_role_requests_running", "both"), 0);
  // a worker that stops answering leaves the sums once it is unhealthy.
  d2.shutdown();
  ASSERT_TRUE(waitFor([&] {
    return roleGauge(registry, "tandem:router_role_requests_waiting", "decode") == 2;
  }));
  pool.stop();
}

// the value of tandem:router_workers{role, state}; -1 when absent.
double workersGauge(prometheus::Registry& registry, const std::string& role, const std::string& state) {
  for (const auto& family : registry.Collect()) {
    if (family.name != "tandem:router_workers") continue;
    for (const auto& m : family.metric) {
      std::map<std::string, std::string> labels;
      for (const auto& l : m.label) labels[l.name] = l.value;
      if (labels["role"] == role && labels["state"] == state) return m.gauge.value;
    }
  }
  return -1;
}

// a draining worker is no capacity: the planner reads healthy workers and
// the role sums, and neither counts it.
TEST(WorkerPoolMetricsTest, ADrainingWorkerCountsAsDrainingAndNotInTheRoleLoad) {
  prometheus::Registry registry;
  ClusterMetrics metrics(registry);
  WorkerPool pool(fastOptions(), &metrics);
  FakeWorker d1(FakeWorkerConfig{.worker_id = "d1"});
  FakeWorker d2(FakeWorkerConfig{.worker_id = "d2"});
  d1.start();
  d2.start();
  d1.setStats(3, 0, 900);
  d2.setStats(1, 0, 900);
  for (FakeWorker* w : {&d1, &d2}) ASSERT_TRUE(pool.registerWorker(w->info()).ok());
  pool.pollOnce();
  EXPECT_EQ(roleGauge(registry, "tandem:router_role_requests_running", "decode"), 4);
  pool.deregisterWorker("d1", /*draining=*/true);
  EXPECT_EQ(workersGauge(registry, "decode", "healthy"), 1);
  EXPECT_EQ(workersGauge(registry, "decode", "draining"), 1);
  EXPECT_EQ(roleGauge(registry, "tandem:router_role_requests_running", "decode"), 1);
  EXPECT_EQ(roleGauge(registry, "tandem:router_role_kv_blocks", "decode"), 1000);
  pool.deregisterWorker("d1");
  EXPECT_EQ(workersGauge(registry, "decode", "draining"), 0);
}

}  // namespace
}  // namespace tandem::router::cluster
