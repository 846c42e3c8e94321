// The cluster's mutual TLS follows its files on reload (what SIGHUP calls
// in `tandem router` and `tandem worker`), against a real gRPC listener on
// loopback with certificates made at test time: the cluster moves from an
// old CA to a new one by replacing the files in place; after reloadTls()
// the listener presents the new certificate and accepts the new one, a
// channel made afterwards presents the new certificate, and a client that
// still holds the old CA's certificate is refused. A reload that fails
// changes nothing.
#include <future>
#include <memory>
#include <mutex>
#include <string>

#include "common/grpc/cluster_auth.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/common/tls/test_pki.h"
#include "tests/test_paths.h"

namespace tandem::grpc_util {
namespace {

using tls::testing::readFile;
using tls::testing::TestCert;
using tls::testing::TestPki;
using tls::testing::writeFile;

// the three files one cluster process is started with; install() replaces
// their contents in place, the way a secret volume or cert-manager does.
struct NodeFiles {
  std::string cert, key, ca;

  NodeFiles(const std::string& dir, const std::string& name)
      : cert(dir + "/" + name + ".pem"), key(dir + "/" + name + ".key"), ca(dir + "/" + name + "-ca.pem") {}
  void install(const TestCert& c, const TestPki& pki) const {
    writeFile(cert, readFile(c.cert_file));
    writeFile(key, readFile(c.key_file));
    writeFile(ca, readFile(pki.caFile()));
  }
  ClusterAuthPtr auth() const {
    absl::StatusOr<ClusterAuthPtr> a =
        ClusterAuth::create({.tls_cert_file = cert, .tls_key_file = key, .tls_ca_file = ca});
    EXPECT_TRUE(a.ok()) << a.status();
    return a.ok() ? *a : nullptr;
  }
};

// every call passes auth.check and is answered OK; remembers the common
// name of the last client certificate it saw.
class PeerRecordingService final : public grpc::CallbackGenericService {
 public:
  explicit PeerRecordingService(ClusterAuthPtr auth) : auth_(std::move(auth)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    class Answer final : public grpc::ServerGenericBidiReactor {
     public:
      explicit Answer(grpc::Status status) { Finish(std::move(status)); }
      void OnDone() override { delete this; }
    };
    if (auto auth = context->auth_context()) {
      for (const grpc::string_ref& name : auth->FindPropertyValues("x509_common_name")) {
        std::lock_guard lock(mu_);
        last_client_.assign(name.data(), name.size());
      }
    }
    return new Answer(auth_->check(*context));
  }
  std::string lastClient() {
    std::lock_guard lock(mu_);
    return last_client_;
  }

 private:
  ClusterAuthPtr auth_;
  std::mutex mu_;
  std::string last_client_;
};

struct ReloadCallResult {
  grpc::Status status;
  std::string server_name;  // the common name of the certificate the server presented
};

class ClusterAuthReloadTest : public ::testing::Test {
 protected:
  ClusterAuthReloadTest()
      : dir_(tandem::testing::makeTempDir()), router_files_(dir_, "router"), worker_files_(dir_, "worker") {}
  ~ClusterAuthReloadTest() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now());
      server_->Wait();
    }
  }

  // the router's internal listener, built the way RegistryServer builds it.
  void startRouter() {
    router_files_.install(old_pki_.issue("router-old", 1, "router-old"), old_pki_);
    router_ = router_files_.auth();
    ASSERT_NE(router_, nullptr);
    service_ = std::make_unique<PeerRecordingService>(router_);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", router_->serverCredentials(), &port_);
    builder.RegisterCallbackGenericService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }

  // one unary call on a new channel of `auth`, on a connection of its own
  // (no subchannel shared with earlier channels, so it handshakes anew).
  ReloadCallResult call(const ClusterAuth& auth) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    grpc::GenericStub stub(auth.channel("127.0.0.1:" + std::to_string(port_), args));
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::Slice empty("", 0);
    grpc::ByteBuffer request(&empty, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, "/tandem.test.Internal/Call", grpc::StubOptions(), &request, &response,
                   [&](grpc::Status status) { done.set_value(std::move(status)); });
    ReloadCallResult result{done.get_future().get(), ""};
    if (auto auth_context = context.auth_context()) {
      for (const grpc::string_ref& name : auth_context->FindPropertyValues("x509_common_name")) {
        result.server_name.assign(name.data(), name.size());
      }
    }
    return result;
  }

  TestPki old_pki_{"old cluster CA"};
  TestPki new_pki_{"new cluster CA"};
  const std::string dir_;
  const NodeFiles router_files_;
  const NodeFiles worker_files_;
  ClusterAuthPtr router_;
  std::unique_ptr<PeerRecordingService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(ClusterAuthReloadTest, AReloadMovesListenersAndNewChannelsToTheNewCertificates) {
  startRouter();
  worker_files_.install(old_pki_.issue("worker-old", 2, "worker-old"), old_pki_);
  ClusterAuthPtr worker = worker_files_.auth();
  ASSERT_NE(worker, nullptr);
  // a process that keeps the old CA's certificate (its files never change).
  const NodeFiles stale_files(dir_, "stale");
  stale_files.install(old_pki_.issue("stale", 3, "stale"), old_pki_);
  ClusterAuthPtr stale = stale_files.auth();
  ASSERT_NE(stale, nullptr);

  ReloadCallResult before = call(*worker);
  ASSERT_TRUE(before.status.ok()) << before.status.error_message();
  EXPECT_EQ(before.server_name, "router-old");
  EXPECT_EQ(service_->lastClient(), "worker-old");
  EXPECT_EQ(router_->tlsGeneration(), 1u);

  // both processes' files move to the new CA, then each is told to reload.
  router_files_.install(new_pki_.issue("router-new", 4, "router-new"), new_pki_);
  worker_files_.install(new_pki_.issue("worker-new", 5, "worker-new"), new_pki_);
  ASSERT_TRUE(router_->reloadTls().ok());
  ASSERT_TRUE(worker->reloadTls().ok());
  EXPECT_EQ(router_->tlsGeneration(), 2u);
  EXPECT_EQ(worker->tlsGeneration(), 2u);
  EXPECT_EQ(router_->tlsMaterial()->subject.find("router-new") != std::string::npos, true)
      << router_->tlsMaterial()->subject;

  // a new channel presents the new certificate, and the listener presents
  // and accepts the new ones.
  ReloadCallResult after = call(*worker);
  ASSERT_TRUE(after.status.ok()) << after.status.error_message();
  EXPECT_EQ(after.server_name, "router-new");
  EXPECT_EQ(service_->lastClient(), "worker-new");
  // the old CA's certificate is refused now, in either direction.
  EXPECT_EQ(call(*stale).status.error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(ClusterAuthReloadTest, AFailedReloadKeepsTheCertificatesInUse) {
  startRouter();
  worker_files_.install(old_pki_.issue("worker-old", 2, "worker-old"), old_pki_);
  ClusterAuthPtr worker = worker_files_.auth();
  ASSERT_NE(worker, nullptr);
  // a new certificate whose key did not come along: the pair does not match.
  const std::string old_key = readFile(router_files_.key);
  router_files_.install(new_pki_.issue("router-new", 4, "router-new"), new_pki_);
  writeFile(router_files_.key, old_key);
  EXPECT_TRUE(absl::IsInvalidArgument(router_->reloadTls()));
  EXPECT_EQ(router_->tlsGeneration(), 1u);
  ReloadCallResult kept = call(*worker);
  ASSERT_TRUE(kept.status.ok()) << kept.status.error_message();
  EXPECT_EQ(kept.server_name, "router-old");
}

TEST(ClusterAuthReloadWithoutTlsTest, ReloadingWithoutTlsDoesNothing) {
  const ClusterAuthPtr none = ClusterAuth::none();
  EXPECT_TRUE(none->reloadTls().ok());
  EXPECT_EQ(none->tlsGeneration(), 0u);
  EXPECT_EQ(none->tlsMaterial(), nullptr);
}

}  // namespace
}  // namespace tandem::grpc_util
