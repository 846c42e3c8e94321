// The cluster's internal-port authentication against a real gRPC server on
// loopback: the shared secret (missing, wrong, right, two of them), mutual
// TLS with the throwaway certificates of tests/data/cluster_tls (no client
// certificate, a stranger's, the cluster's), and which listeners an
// unauthenticated cluster may open.
#include "common/grpc/cluster_auth.h"

#include <stdlib.h>

#include <fstream>
#include <future>
#include <memory>
#include <string>

#include "common/host_port.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/test_paths.h"

namespace tandem::grpc_util {
namespace {

const char kSecret[] = "0123456789abcdef0123456789abcdef";

std::string tlsFile(const std::string& name) {
  return tandem::testing::testDataDir() + "/cluster_tls/" + name;
}

ClusterAuthPtr makeAuth(ClusterAuthOptions options) {
  absl::StatusOr<ClusterAuthPtr> auth = ClusterAuth::create(options);
  EXPECT_TRUE(auth.ok()) << auth.status();
  return auth.ok() ? *auth : nullptr;
}

ClusterAuthPtr withSecret(const std::string& secret) { return makeAuth({.secret = secret}); }

ClusterAuthPtr withTls(const std::string& node, const std::string& ca = "ca.pem") {
  return makeAuth({.tls_cert_file = tlsFile(node + ".pem"),
                   .tls_key_file = tlsFile(node + ".key"),
                   .tls_ca_file = tlsFile(ca)});
}

// every call (any method) answers what auth.check says.
class CheckedService final : public grpc::CallbackGenericService {
 public:
  explicit CheckedService(ClusterAuthPtr auth) : auth_(std::move(auth)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
    class Answer final : public grpc::ServerGenericBidiReactor {
     public:
      explicit Answer(grpc::Status status) { Finish(std::move(status)); }
      void OnDone() override { delete this; }
    };
    return new Answer(auth_->check(*context));
  }

 private:
  ClusterAuthPtr auth_;
};

// an internal listener on 127.0.0.1 built the way the cluster builds them.
class Listener {
 public:
  explicit Listener(ClusterAuthPtr auth) : auth_(auth), service_(auth) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", auth_->serverCredentials(), &port_);
    builder.RegisterCallbackGenericService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~Listener() {
    server_->Shutdown(std::chrono::system_clock::now());
    server_->Wait();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  bool started() const { return server_ != nullptr && port_ > 0; }

 private:
  ClusterAuthPtr auth_;
  CheckedService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// one unary call on `channel`; `extra_secret` adds a (second) secret entry by hand.
grpc::Status call(const std::shared_ptr<grpc::Channel>& channel, const std::string& extra_secret = "") {
  grpc::GenericStub stub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  if (!extra_secret.empty()) context.AddMetadata(kClusterSecretKey, extra_secret);
  grpc::Slice empty("", 0);
  grpc::ByteBuffer request(&empty, 1);
  grpc::ByteBuffer response;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, "/tandem.test.Internal/Call", grpc::StubOptions(), &request, &response,
                 [&](grpc::Status status) { done.set_value(std::move(status)); });
  return done.get_future().get();
}

TEST(ClusterAuthTest, CallsWithoutTheRightSecretAreUnauthenticated) {
  Listener listener(withSecret(kSecret));
  ASSERT_TRUE(listener.started());
  EXPECT_EQ(call(ClusterAuth::none()->channel(listener.address())).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // the same length, one character off; a prefix; a longer one.
  std::string wrong = kSecret;
  wrong.back() = 'x';
  EXPECT_EQ(call(withSecret(wrong)->channel(listener.address())).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call(withSecret(std::string(kSecret).substr(0, 20))->channel(listener.address()))
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(call(withSecret(std::string(kSecret) + "0")->channel(listener.address())).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(call(withSecret(kSecret)->channel(listener.address())).ok());
}

TEST(ClusterAuthTest, TwoSecretsInOneCallAreNotTwoGuesses) {
  Listener listener(withSecret(kSecret));
  ASSERT_TRUE(listener.started());
  std::string wrong = kSecret;
  wrong.front() = 'x';
  EXPECT_EQ(call(withSecret(kSecret)->channel(listener.address()), wrong).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST(ClusterAuthTest, WithoutASecretConfiguredEveryCallPasses) {
  Listener listener(ClusterAuth::none());
  ASSERT_TRUE(listener.started());
  EXPECT_TRUE(call(ClusterAuth::none()->channel(listener.address())).ok());
  EXPECT_TRUE(call(withSecret(kSecret)->channel(listener.address())).ok());
}

TEST(ClusterAuthTest, MutualTlsAcceptsOnlyAClientWithAClusterCertificate) {
  Listener listener(withTls("node"));
  ASSERT_TRUE(listener.started());
  // plain text to a TLS port.
  EXPECT_EQ(call(ClusterAuth::none()->channel(listener.address())).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // TLS that trusts the cluster CA but presents no certificate.
  std::ifstream ca_file(tlsFile("ca.pem"));
  std::string ca((std::istreambuf_iterator<char>(ca_file)), std::istreambuf_iterator<char>());
  grpc::SslCredentialsOptions no_cert;
  no_cert.pem_root_certs = ca;
  EXPECT_EQ(call(grpc::CreateChannel(listener.address(), grpc::SslCredentials(no_cert))).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // a certificate the cluster CA did not sign.
  EXPECT_EQ(call(withTls("stranger", "ca.pem")->channel(listener.address())).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // the cluster's own.
  EXPECT_TRUE(call(withTls("node")->channel(listener.address())).ok());
}

TEST(ClusterAuthTest, AClientChecksTheServersCertificateToo) {
  Listener listener(withTls("stranger", "ca.pem"));
  ASSERT_TRUE(listener.started());
  EXPECT_EQ(call(withTls("node")->channel(listener.address())).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST(ClusterAuthTest, TlsAndASecretTogetherNeedBoth) {
  ClusterAuthOptions both{.secret = kSecret,
                          .tls_cert_file = tlsFile("node.pem"),
                          .tls_key_file = tlsFile("node.key"),
                          .tls_ca_file = tlsFile("ca.pem")};
  Listener listener(makeAuth(both));
  ASSERT_TRUE(listener.started());
  EXPECT_EQ(call(withTls("node")->channel(listener.address())).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(call(makeAuth(both)->channel(listener.address())).ok());
}

TEST(ClusterAuthTest, AnUnauthenticatedClusterListensOnLoopbackOnly) {
  const ClusterAuthPtr none = ClusterAuth::none();
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"}) {
    EXPECT_TRUE(none->checkListenHost(host).ok()) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "", "10.0.0.7", "192.168.1.2", "example.com", "::ffff:10.0.0.1"}) {
    EXPECT_TRUE(absl::IsFailedPrecondition(none->checkListenHost(host))) << host;
  }
  EXPECT_TRUE(withSecret(kSecret)->checkListenHost("0.0.0.0").ok());
  EXPECT_TRUE(withTls("node")->checkListenHost("0.0.0.0").ok());
  EXPECT_TRUE(makeAuth({.allow_insecure = true})->checkListenHost("0.0.0.0").ok());
}

TEST(ClusterAuthTest, RefusesWeakSecretsAndPartialTls) {
  EXPECT_TRUE(absl::IsInvalidArgument(ClusterAuth::create({.secret = "short"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      ClusterAuth::create({.secret = "0123456789abcdef 0123456789abcdef"}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      ClusterAuth::create({.secret = std::string("0123456789abcdef\n0123456789")}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      ClusterAuth::create({.tls_cert_file = tlsFile("node.pem"), .tls_key_file = tlsFile("node.key")})
          .status()));
  EXPECT_TRUE(absl::IsNotFound(ClusterAuth::create({.tls_cert_file = "/nonexistent/cert.pem",
                                                    .tls_key_file = tlsFile("node.key"),
                                                    .tls_ca_file = tlsFile("ca.pem")})
                                   .status()));
}

TEST(ClusterAuthTest, ReadsTheSecretFromAFileOrTheEnvironment) {
  const std::string dir = tandem::testing::makeTempDir();
  const std::string file = dir + "/secret";
  std::ofstream(file) << kSecret << "\n";
  absl::StatusOr<std::string> secret = ClusterAuth::readSecret(file);
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_EQ(*secret, kSecret);
  EXPECT_TRUE(absl::IsNotFound(ClusterAuth::readSecret(dir + "/missing").status()));
  std::ofstream(dir + "/blank") << "\n";
  EXPECT_TRUE(absl::IsInvalidArgument(ClusterAuth::readSecret(dir + "/blank").status()));
  setenv(kClusterSecretEnv, "from-the-environment-0123", 1);
  EXPECT_EQ(*ClusterAuth::readSecret(""), "from-the-environment-0123");
  unsetenv(kClusterSecretEnv);
  EXPECT_EQ(*ClusterAuth::readSecret(""), "");
}

TEST(HostPortTest, ParsesAndFormatsHostPort) {
  absl::StatusOr<HostPort> v4 = parseHostPort("10.0.0.1:8002");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "10.0.0.1");
  EXPECT_EQ(v4->port, 8002);
  absl::StatusOr<HostPort> v6 = parseHostPort("[::1]:7");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(formatHostPort("::1", 7), "[::1]:7");
  for (const char* bad : {"", "host", ":80", "[]:80", "h:", "h:x", "h:65536", "h:-1"}) {
    EXPECT_FALSE(parseHostPort(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace tandem::grpc_util
