// TLS credentials of a gRPC listener that follow a certificate store, on
// loopback with certificates made at test time: a client trusting the test
// CA is served and a plain one is not, a reload changes the certificate new
// connections see (the server's common name, read from the client's auth
// context), a failed one changes nothing, and a client CA makes client
// certificates required.
#include "common/grpc/reloadable_server_credentials.h"

#include <future>
#include <memory>
#include <string>

#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "tests/common/tls/test_pki.h"

namespace tandem::grpc_util {
namespace {

using tls::testing::TestCert;
using tls::testing::TestPki;

// every call succeeds.
class OkService final : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext*) override {
    class Answer final : public grpc::ServerGenericBidiReactor {
     public:
      Answer() { Finish(grpc::Status::OK); }
      void OnDone() override { delete this; }
    };
    return new Answer();
  }
};

struct CallResult {
  grpc::Status status;
  std::string server_name;  // the x509 common name the client saw
};

class ReloadableServerCredentialsTest : public ::testing::Test {
 protected:
  void start(bool client_ca) {
    cert_ = pki_.issue("server-1", 1, "server");
    store_ = *tls::CertificateStore::create(
        {cert_.cert_file, cert_.key_file, client_ca ? pki_.caFile() : ""});
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", reloadableServerCredentials(store_), &port_);
    builder.RegisterCallbackGenericService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  ~ReloadableServerCredentialsTest() override {
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now());
      server_->Wait();
    }
  }

  std::shared_ptr<grpc::ChannelCredentials> tlsCredentials(const TestCert* client = nullptr) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = tls::testing::readFile(pki_.caFile());
    if (client != nullptr) {
      options.pem_cert_chain = tls::testing::readFile(client->cert_file);
      options.pem_private_key = tls::testing::readFile(client->key_file);
    }
    return grpc::SslCredentials(options);
  }

  // one call on a new connection of its own (no subchannel shared with
  // earlier channels, so it handshakes anew).
  CallResult call(const std::shared_ptr<grpc::ChannelCredentials>& credentials) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port_), credentials, args);
    grpc::GenericStub stub(channel);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    grpc::Slice empty("", 0);
    grpc::ByteBuffer request(&empty, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    stub.UnaryCall(&context, "/tandem.test.Any/Call", grpc::StubOptions(), &request, &response,
                   [&](grpc::Status status) { done.set_value(std::move(status)); });
    CallResult result{done.get_future().get(), ""};
    if (auto auth = context.auth_context()) {
      for (const grpc::string_ref& name : auth->FindPropertyValues("x509_common_name")) {
        result.server_name.assign(name.data(), name.size());
      }
    }
    return result;
  }

  TestPki pki_;
  TestCert cert_;
  tls::CertificateStorePtr store_;
  OkService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(ReloadableServerCredentialsTest, ServesTlsClientsOfTheCaAndNotPlainOnes) {
  start(false);
  CallResult tls_call = call(tlsCredentials());
  EXPECT_TRUE(tls_call.status.ok()) << tls_call.status.error_message();
  EXPECT_EQ(tls_call.server_name, "server-1");
  EXPECT_EQ(call(grpc::InsecureChannelCredentials()).status.error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(ReloadableServerCredentialsTest, AReloadChangesTheCertificateOfNewConnections) {
  start(false);
  EXPECT_EQ(call(tlsCredentials()).server_name, "server-1");
  pki_.issue("server-2", 2, "server");
  ASSERT_TRUE(store_->reload().ok());
  CallResult after = call(tlsCredentials());
  EXPECT_TRUE(after.status.ok()) << after.status.error_message();
  EXPECT_EQ(after.server_name, "server-2");
  // a failed reload (a key that is not the certificate's) changes nothing.
  const std::string key = tls::testing::readFile(cert_.key_file);
  pki_.issue("server-3", 3, "server");
  tls::testing::writeFile(cert_.key_file, key);
  EXPECT_FALSE(store_->reload().ok());
  CallResult kept = call(tlsCredentials());
  EXPECT_TRUE(kept.status.ok()) << kept.status.error_message();
  EXPECT_EQ(kept.server_name, "server-2");
}

TEST_F(ReloadableServerCredentialsTest, AClientCaRequiresAClientCertificate) {
  start(true);
  EXPECT_FALSE(call(tlsCredentials()).status.ok());
  TestCert client = pki_.issue("client", 7, "client");
  CallResult with_cert = call(tlsCredentials(&client));
  EXPECT_TRUE(with_cert.status.ok()) << with_cert.status.error_message();
}

}  // namespace
}  // namespace tandem::grpc_util
