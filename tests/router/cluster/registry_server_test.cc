// The router's internal port against real gRPC on loopback, beside a real
// public front end: the public port serves no registry; the registry takes
// only calls with the cluster secret and only WorkerInfo it can believe;
// without a secret it listens on loopback only.
#include "router/cluster/registry_server.h"

#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "router/frontend/frontend_server.h"
#include "tests/router/cluster/fake_worker.h"

namespace tandem::router::cluster {
namespace {

const char kSecret[] = "0123456789abcdef0123456789abcdef";

grpc_util::ClusterAuthPtr auth(const std::string& secret) {
  absl::StatusOr<grpc_util::ClusterAuthPtr> a = grpc_util::ClusterAuth::create({.secret = secret});
  EXPECT_TRUE(a.ok()) << a.status();
  return *a;
}

// a decode worker's complete, believable info.
tandem::v1::WorkerInfo goodInfo() {
  testing::FakeWorker worker(testing::FakeWorkerConfig{.worker_id = "d1"});
  tandem::v1::WorkerInfo info = worker.info();
  info.set_address("127.0.0.1:7001");
  info.set_metrics_url("http://127.0.0.1:7002/metrics");
  info.set_kv_endpoint("grpc://127.0.0.1:7003");
  return info;
}

class RegistryServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<RegistryServerPtr> registry =
        RegistryServer::start({.host = "127.0.0.1", .port = 0, .auth = auth(kSecret)}, &pool_);
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = std::move(*registry);
    FrontendOptions options;
    options.http_port = 0;
    options.grpc_port = 0;
    options.grpc_at_start = true;
    absl::StatusOr<FrontendServerPtr> frontend = FrontendServer::start(options);
    ASSERT_TRUE(frontend.ok()) << frontend.status();
    frontend_ = std::move(*frontend);
  }
  void TearDown() override {
    if (frontend_ != nullptr) frontend_->drainAndStop(std::chrono::milliseconds(0));
  }

  std::string internalAddress() const { return "127.0.0.1:" + std::to_string(registry_->port()); }
  std::string publicAddress() const { return "127.0.0.1:" + std::to_string(frontend_->grpcPort()); }

  // Register at `address` with the channel `credentials` make.
  grpc::Status registerAt(const std::string& address, const grpc_util::ClusterAuthPtr& credentials,
                          const tandem::v1::WorkerInfo& info) {
    grpc::ClientContext context;
    tandem::v1::RegisterResponse response;
    return tandem::v1::Registry::NewStub(credentials->channel(address))
        ->Register(&context, info, &response);
  }
  grpc::Status deregisterAt(const grpc_util::ClusterAuthPtr& credentials, const std::string& id) {
    grpc::ClientContext context;
    tandem::v1::DeregisterRequest request;
    request.set_worker_id(id);
    tandem::v1::DeregisterResponse response;
    return tandem::v1::Registry::NewStub(credentials->channel(internalAddress()))
        ->Deregister(&context, request, &response);
  }

  WorkerPool pool_{WorkerPoolOptions{}, nullptr};
  RegistryServerPtr registry_;
  FrontendServerPtr frontend_;
};

TEST_F(RegistryServerTest, ThePublicPortServesNoRegistry) {
  EXPECT_EQ(registerAt(publicAddress(), auth(kSecret), goodInfo()).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(registerAt(publicAddress(), grpc_util::ClusterAuth::none(), goodInfo()).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_TRUE(pool_.snapshot().empty());
}

TEST_F(RegistryServerTest, CallsWithoutTheSecretAreUnauthenticatedAndChangeNothing) {
  std::string wrong = kSecret;
  wrong.back() = 'x';
  for (const grpc_util::ClusterAuthPtr& stranger : {grpc_util::ClusterAuth::none(), auth(wrong)}) {
    EXPECT_EQ(registerAt(internalAddress(), stranger, goodInfo()).error_code(),
              grpc::StatusCode::UNAUTHENTICATED);
  }
  EXPECT_TRUE(pool_.snapshot().empty());

  ASSERT_TRUE(registerAt(internalAddress(), auth(kSecret), goodInfo()).ok());
  ASSERT_EQ(pool_.snapshot().size(), 1u);
  for (const grpc_util::ClusterAuthPtr& stranger : {grpc_util::ClusterAuth::none(), auth(wrong)}) {
    EXPECT_EQ(deregisterAt(stranger, "d1").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  ASSERT_EQ(pool_.snapshot().size(), 1u);
  EXPECT_TRUE(pool_.snapshot()[0].healthy);

  EXPECT_TRUE(deregisterAt(auth(kSecret), "d1").ok());
  EXPECT_TRUE(pool_.snapshot().empty());
}

TEST_F(RegistryServerTest, RefusesWorkerInfoItCannotBelieve) {
  struct Case {
    const char* what;
    std::function<void(tandem::v1::WorkerInfo&)> spoil;
  };
  const std::vector<Case> cases = {
      {"no worker_id", [](auto& i) { i.set_worker_id(""); }},
      {"a long worker_id", [](auto& i) { i.set_worker_id(std::string(129, 'w')); }},
      {"a worker_id with a space", [](auto& i) { i.set_worker_id("d 1"); }},
      {"a worker_id with a newline", [](auto& i) { i.set_worker_id("d1\n"); }},
      {"no address", [](auto& i) { i.set_address(""); }},
      {"an address without a port", [](auto& i) { i.set_address("127.0.0.1"); }},
      {"port 0", [](auto& i) { i.set_address("127.0.0.1:0"); }},
      {"port 65536", [](auto& i) { i.set_address("127.0.0.1:65536"); }},
      {"an empty host", [](auto& i) { i.set_address(":7001"); }},
      {"a host with a space", [](auto& i) { i.set_address("a b:7001"); }},
      {"a long host", [](auto& i) { i.set_address(std::string(254, 'h') + ":7001"); }},
      {"an unknown role", [](auto& i) { i.set_role(static_cast<tandem::v1::WorkerRole>(42)); }},
      {"no role", [](auto& i) { i.set_role(tandem::v1::WORKER_ROLE_UNSPECIFIED); }},
      {"no model name", [](auto& i) { i.set_model_name(""); }},
      {"a long model name", [](auto& i) { i.set_model_name(std::string(257, 'm')); }},
      {"a model name with a control byte", [](auto& i) { i.set_model_name("m\x01"); }},
      {"a long model path", [](auto& i) { i.set_model_path(std::string(4097, 'p')); }},
      {"a model path with a newline", [](auto& i) { i.set_model_path("/m\n"); }},
      {"a long metrics url", [](auto& i) { i.set_metrics_url(std::string(4097, 'u')); }},
      {"a long kv endpoint", [](auto& i) { i.set_kv_endpoint(std::string(4097, 'e')); }},
      {"max_model_len 0", [](auto& i) { i.set_max_model_len(0); }},
      {"max_model_len -1", [](auto& i) { i.set_max_model_len(-1); }},
      {"max_model_len 2^24 + 1", [](auto& i) { i.set_max_model_len((1 << 24) + 1); }},
      {"vocab_size 0", [](auto& i) { i.set_vocab_size(0); }},
      {"block_size 0", [](auto& i) { i.set_block_size(0); }},
      {"block_size 65537", [](auto& i) { i.set_block_size(65537); }},
      {"num_blocks -1", [](auto& i) { i.set_num_blocks(-1); }},
  };
  for (const Case& c : cases) {
    tandem::v1::WorkerInfo info = goodInfo();
    c.spoil(info);
    EXPECT_EQ(registerAt(internalAddress(), auth(kSecret), info).error_code(),
              grpc::StatusCode::INVALID_ARGUMENT)
        << c.what;
  }
  EXPECT_TRUE(pool_.snapshot().empty());
  EXPECT_TRUE(registerAt(internalAddress(), auth(kSecret), goodInfo()).ok());
}

TEST_F(RegistryServerTest, RefusesAWorkerOfAnotherModelOnceAModelIsServed) {
  tandem::v1::WorkerInfo other = goodInfo();
  other.set_worker_id("d2");
  other.set_address("127.0.0.1:7011");
  other.set_model_name("another-model");
  pool_.setModelName(goodInfo().model_name());
  EXPECT_EQ(registerAt(internalAddress(), auth(kSecret), other).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_TRUE(registerAt(internalAddress(), auth(kSecret), goodInfo()).ok());
  EXPECT_EQ(pool_.snapshot().size(), 1u);
}

TEST(RegistryServerListenTest, ANonLoopbackListenerNeedsASecretOrAConsciousChoice) {
  WorkerPool pool(WorkerPoolOptions{}, nullptr);
  absl::StatusOr<RegistryServerPtr> open = RegistryServer::start({.host = "0.0.0.0", .port = 0}, &pool);
  EXPECT_TRUE(absl::IsFailedPrecondition(open.status())) << open.status();
  absl::StatusOr<RegistryServerPtr> loopback =
      RegistryServer::start({.host = "127.0.0.1", .port = 0}, &pool);
  EXPECT_TRUE(loopback.ok()) << loopback.status();
  absl::StatusOr<RegistryServerPtr> with_secret =
      RegistryServer::start({.host = "0.0.0.0", .port = 0, .auth = auth(kSecret)}, &pool);
  EXPECT_TRUE(with_secret.ok()) << with_secret.status();
  absl::StatusOr<grpc_util::ClusterAuthPtr> insecure =
      grpc_util::ClusterAuth::create({.allow_insecure = true});
  ASSERT_TRUE(insecure.ok());
  absl::StatusOr<RegistryServerPtr> allowed =
      RegistryServer::start({.host = "0.0.0.0", .port = 0, .auth = *insecure}, &pool);
  EXPECT_TRUE(allowed.ok()) << allowed.status();
}

}  // namespace
}  // namespace tandem::router::cluster
