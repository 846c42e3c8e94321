// A worker started with a router address registers with it, again every
// heartbeat interval the router names, and deregisters when it stops; a
// router that is not there yet does not stop it; after a reload of the
// cluster's TLS files its heartbeats present the new certificate.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/worker/registration_client.h"
#include "server/worker/worker.h"
#include "tandem/v1/worker.grpc.pb.h"
#include "tests/common/tls/test_pki.h"
#include "tests/test_paths.h"
#include "tests/server/worker/worker_test_client.h"

namespace tandem::worker {
namespace {

// a minimal real Registry: records what it receives.
class RecordingRegistry final : public tandem::v1::Registry::CallbackService {
 public:
  grpc::ServerUnaryReactor* Register(grpc::CallbackServerContext* ctx,
                                     const tandem::v1::WorkerInfo* info,
                                     tandem::v1::RegisterResponse* response) override {
    {
      std::lock_guard lock(mu_);
      registered_.push_back(*info);
    }
    response->set_heartbeat_interval_ms(50);
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
  grpc::ServerUnaryReactor* Deregister(grpc::CallbackServerContext* ctx,
                                       const tandem::v1::DeregisterRequest* request,
                                       tandem::v1::DeregisterResponse* response) override {
    {
      std::lock_guard lock(mu_);
      deregistered_.push_back(request->worker_id());
      drains_.push_back(request->draining());
    }
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  std::vector<tandem::v1::WorkerInfo> registered() {
    std::lock_guard lock(mu_);
    return registered_;
  }
  std::vector<std::string> deregistered() {
    std::lock_guard lock(mu_);
    return deregistered_;
  }
  // DeregisterRequest.draining of each Deregister, in order.
  std::vector<bool> drains() {
    std::lock_guard lock(mu_);
    return drains_;
  }

 private:
  std::mutex mu_;
  std::vector<tandem::v1::WorkerInfo> registered_;
  std::vector<std::string> deregistered_;
  std::vector<bool> drains_;
};

struct RegistryServer {
  explicit RegistryServer(int port_wanted = 0,
                          const grpc_util::ClusterAuthPtr& auth = grpc_util::ClusterAuth::none()) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port_wanted), auth->serverCredentials(),
                             &port);
    builder.RegisterService(&service);
    server = builder.BuildAndStart();
  }
  ~RegistryServer() {
    server->Shutdown(std::chrono::system_clock::now());
    server->Wait();
  }
  RecordingRegistry service;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

bool waitFor(const std::function<bool()>& cond) {
  for (int i = 0; i < 500; ++i) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST(RegistrationTest, RegistersRepeatedlyAndDeregistersOnShutdown) {
  RegistryServer registry;
  ASSERT_NE(registry.port, 0);
  WorkerOptions options = testing::smallWorkerOptions(tandem::v1::WORKER_ROLE_DECODE);
  options.router_address = "127.0.0.1:" + std::to_string(registry.port);
  auto worker = Worker::create(options);
  ASSERT_TRUE(worker.ok()) << worker.status();
  // the router asked for a 50 ms heartbeat: several registrations soon.
  ASSERT_TRUE(waitFor([&] { return registry.service.registered().size() >= 3; }));
  for (const auto& info : registry.service.registered()) {
    EXPECT_EQ(info.worker_id(), (*worker)->info().worker_id());
    EXPECT_EQ(info.address(), (*worker)->info().address());
    EXPECT_EQ(info.role(), tandem::v1::WORKER_ROLE_DECODE);
    EXPECT_EQ(info.model_path(), options.model_path);
    EXPECT_EQ(info.kv_endpoint(), (*worker)->info().kv_endpoint());
    EXPECT_FALSE(info.kv_endpoint().empty());
  }
  (*worker)->shutdown(std::chrono::milliseconds(100));
  EXPECT_EQ(registry.service.deregistered(),
            std::vector<std::string>{(*worker)->info().worker_id()});
}

// Worker.Stats of the worker at `address`.
grpc::Status stats(const std::string& address, tandem::v1::WorkerStats* out) {
  auto stub = tandem::v1::Worker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return stub->Stats(&ctx, tandem::v1::StatsRequest(), out);
}

// scale-down: the worker tells the router it drains and its Stats say so
// while a stream runs there (served to its end); once idle it leaves
// routing: the final Deregister, Stats UNAVAILABLE.
TEST(RegistrationTest, ADrainingWorkerFinishesItsStreamThenLeavesRouting) {
  RegistryServer registry;
  WorkerOptions options = testing::smallWorkerOptions(tandem::v1::WORKER_ROLE_DECODE);
  options.router_address = "127.0.0.1:" + std::to_string(registry.port);
  options.drain_timeout = std::chrono::seconds(60);
  auto worker = Worker::create(options);
  ASSERT_TRUE(worker.ok()) << worker.status();
  ASSERT_TRUE(waitFor([&] { return !registry.service.registered().empty(); }));
  const std::string address = (*worker)->info().address();
  testing::GenerateResult result;
  std::atomic<bool> stream_done{false};
  std::thread stream([&] {
    result = testing::generate(address, {1, 2, 3, 4}, 200);
    stream_done = true;
  });
  // the stream seen running, or already over: on a fast machine its 200
  // tokens can start and end between two looks (then the drain below finds
  // nothing in flight, which the checks after it allow for)
  const bool seen = waitFor([&] { return (*worker)->inFlight() > 0 || stream_done; });
  if (!seen) stream.join();  // (generate's 30 s deadline: the test fails, the process does not abort)
  ASSERT_TRUE(seen);
  (*worker)->beginDrain();
  EXPECT_EQ(registry.service.drains(), std::vector<bool>{true});
  tandem::v1::WorkerStats s;
  const grpc::Status draining = stats(address, &s);
  const bool running = (*worker)->inFlight() > 0;
  stream.join();
  (*worker)->waitLeftRouting();
  ASSERT_TRUE(result.status.ok()) << result.status.error_message();
  EXPECT_EQ(result.tokens.size(), 200u);
  if (running) {
    // (the stream may have ended before the Stats call on a fast machine)
    EXPECT_TRUE(draining.ok()) << draining.error_message();
    EXPECT_TRUE(s.draining());
  }
  EXPECT_EQ(registry.service.drains(), (std::vector<bool>{true, false}));
  EXPECT_EQ(stats(address, &s).error_code(), grpc::StatusCode::UNAVAILABLE);
}

// the router starts after the worker (or restarted): the worker keeps
// trying every second and is learnt once the router is up.
TEST(RegistrationTest, KeepsTryingUntilTheRouterIsUp) {
  int port = 0;
  {
    RegistryServer probe;  // find a free port, then free it
    port = probe.port;
  }
  WorkerOptions options = testing::smallWorkerOptions(tandem::v1::WORKER_ROLE_PREFILL);
  options.router_address = "127.0.0.1:" + std::to_string(port);
  auto worker = Worker::create(options);
  ASSERT_TRUE(worker.ok()) << worker.status();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ((*worker)->registration()->numRegistered(), 0);
  RegistryServer registry(port);
  ASSERT_EQ(registry.port, port);
  ASSERT_TRUE(waitFor([&] { return !registry.service.registered().empty(); }));
  EXPECT_EQ(registry.service.registered()[0].role(), tandem::v1::WORKER_ROLE_PREFILL);
  EXPECT_TRUE(registry.service.registered()[0].kv_endpoint().empty());
}

// the cluster moves from an old CA to a new one: both sides' files are
// replaced and reloaded (SIGHUP), then the router restarts on the same
// port. Its new listener takes only the new CA's certificates, so the
// worker is registered again only if its heartbeat made a new channel
// with the new certificate.
TEST(RegistrationTest, AfterATlsReloadHeartbeatsPresentTheNewCertificate) {
  using tls::testing::readFile;
  using tls::testing::writeFile;
  tls::testing::TestPki old_pki("old cluster CA");
  tls::testing::TestPki new_pki("new cluster CA");
  const std::string dir = tandem::testing::makeTempDir();
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
  auto registry = std::make_unique<RegistryServer>(0, *router_auth);
  const int port = registry->port;
  tandem::v1::WorkerInfo info;
  info.set_worker_id("d1");
  RegistrationClient client("127.0.0.1:" + std::to_string(port), info, *worker_auth);
  // waits up to 30 s (TLS handshakes on a loaded, sanitized build).
  const auto eventually = [](const std::function<bool()>& cond) {
    for (int i = 0; i < 3000; ++i) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  ASSERT_TRUE(eventually([&] { return !registry->service.registered().empty(); }));

  install("router", new_pki, 3);
  install("worker", new_pki, 4);
  ASSERT_TRUE((*router_auth)->reloadTls().ok());
  ASSERT_TRUE((*worker_auth)->reloadTls().ok());
  registry.reset();
  registry = std::make_unique<RegistryServer>(port, *router_auth);
  ASSERT_EQ(registry->port, port);
  EXPECT_TRUE(eventually([&] { return !registry->service.registered().empty(); }));
}

}  // namespace
}  // namespace tandem::worker
