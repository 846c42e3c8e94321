// The router's public front end with TLS and an API key file, over a
// FakeGenerator, with real clients on loopback: an OpenAI completion and an
// SSE stream over HTTPS, tandem.v1.Inference over TLS with the test CA,
// per-key request and token rates (429 with Retry-After and OpenAI's body on
// HTTP, RESOURCE_EXHAUSTED with retry-after metadata on gRPC), unknown keys
// (401 / UNAUTHENTICATED), and a key file re-read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "nlohmann/json.hpp"
#include "router/frontend/frontend_server.h"
#include "tandem/v1/inference.grpc.pb.h"
#include "tests/common/http/server_test_util.h"
#include "tests/common/tls/test_pki.h"
#include "tests/common/tls/tls_client.h"
#include "tests/fakes/fake_generator.h"
#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem::router {
namespace {

using tls::testing::HttpReply;
using tls::testing::TestCert;
using tls::testing::TestPki;
using tls::testing::TlsClient;

constexpr char kLimitedKey[] = "sk-limited-000001";
constexpr char kTokensKey[] = "sk-tokens-0000001";
constexpr char kOpenKey[] = "sk-open-000000001";

class FrontendTlsKeysTest : public ::testing::Test {
 protected:
  ~FrontendTlsKeysTest() override {
    if (frontend_ != nullptr) frontend_->drainAndStop(std::chrono::milliseconds(0));
    generator_.reset();
  }

  void serve(const std::string& key_file_text) {
    TestCert cert = pki_.issue("router", 42, "router");
    key_file_ = pki_.dir() + "/api-keys.txt";
    tls::testing::writeFile(key_file_, key_file_text);
    FrontendOptions options;
    options.http_port = 0;
    options.grpc_port = 0;
    options.tls = *tls::CertificateStore::create({cert.cert_file, cert.key_file});
    absl::StatusOr<ApiKeyLimitsPtr> keys = ApiKeyLimits::create({}, key_file_);
    ASSERT_TRUE(keys.ok()) << keys.status();
    keys_ = *keys;
    options.admission.api_key_limits = keys_;
    absl::StatusOr<FrontendServerPtr> frontend = FrontendServer::start(options);
    ASSERT_TRUE(frontend.ok()) << frontend.status();
    frontend_ = std::move(*frontend);
    absl::StatusOr<ServedModelPtr> model =
        ServedModel::load(tandem::testing::storiesGguf(), "stories260K", 256);
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE(frontend_->serve(std::move(*model), generator_.get()).ok());
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = tls::testing::readFile(pki_.caFile());
    stub_ = tandem::v1::Inference::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(frontend_->grpcPort()), grpc::SslCredentials(ssl)));
    generator_->setDefaultScript({.tokens = {oracle_.completion_ids[0], oracle_.completion_ids[1]}});
  }

  HttpReply post(const std::string& body, const std::string& key) {
    auto client = TlsClient::connect(frontend_->httpPort(), {.ca_file = pki_.caFile()});
    EXPECT_NE(client, nullptr);
    if (client == nullptr) return {};
    EXPECT_TRUE(client->send(http::testing::postRequest(
        "/v1/completions", body, key.empty() ? "" : "Authorization: Bearer " + key + "\r\n")));
    return client->readResponse().value_or(HttpReply{});
  }

  struct GrpcResult {
    grpc::Status status;
    std::string retry_after;
    std::string text;
  };
  GrpcResult generate(const std::string& key, int max_tokens = 0) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!key.empty()) context.AddMetadata("authorization", "Bearer " + key);
    tandem::v1::GenerateRequest request;
    request.set_text("Once");
    if (max_tokens > 0) request.mutable_params()->set_max_tokens(max_tokens);
    auto stream = stub_->Generate(&context, request);
    GrpcResult result;
    tandem::v1::GenerateResponse message;
    while (stream->Read(&message)) result.text += message.text();
    result.status = stream->Finish();
    const auto& trailers = context.GetServerTrailingMetadata();
    if (auto it = trailers.find("retry-after"); it != trailers.end()) {
      result.retry_after.assign(it->second.data(), it->second.size());
    }
    return result;
  }

  const tandem::testing::OracleCase& oracle_ = tandem::testing::storiesOracle()[0];
  TestPki pki_;
  std::string key_file_;
  ApiKeyLimitsPtr keys_;
  FrontendServerPtr frontend_;
  std::unique_ptr<tandem::testing::FakeGenerator> generator_ =
      std::make_unique<tandem::testing::FakeGenerator>();
  std::unique_ptr<tandem::v1::Inference::Stub> stub_;
};

TEST_F(FrontendTlsKeysTest, CompletionAndSseStreamOverHttps) {
  serve(std::string(kOpenKey) + "\n");
  HttpReply reply = post(R"({"model":"stories260K","prompt":"Once"})", kOpenKey);
  ASSERT_EQ(reply.status, 200) << reply.body;
  nlohmann::json body = nlohmann::json::parse(reply.body);
  EXPECT_EQ(body["usage"]["completion_tokens"], 2);

  HttpReply stream = post(R"({"model":"stories260K","prompt":"Once","stream":true})", kOpenKey);
  ASSERT_EQ(stream.status, 200);
  EXPECT_EQ(stream.header("Content-Type").rfind("text/event-stream", 0), 0u);
  EXPECT_NE(stream.body.find("data: {"), std::string::npos);
  EXPECT_NE(stream.body.find("data: [DONE]\n\n"), std::string::npos) << stream.body;
}

TEST_F(FrontendTlsKeysTest, GrpcOverTlsWithTheTestCa) {
  serve(std::string(kOpenKey) + "\n");
  GrpcResult ok = generate(kOpenKey);
  EXPECT_TRUE(ok.status.ok()) << ok.status.error_message();
  EXPECT_FALSE(ok.text.empty());
  // a plain-text client cannot talk to the TLS port.
  auto plain = tandem::v1::Inference::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(frontend_->grpcPort()), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  tandem::v1::ListModelsResponse models;
  EXPECT_EQ(plain->ListModels(&context, {}, &models).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(FrontendTlsKeysTest, UnknownKeysAre401AndUnauthenticated) {
  serve(std::string(kOpenKey) + "\n");
  const std::string body = R"({"model":"stories260K","prompt":"Once"})";
  EXPECT_EQ(post(body, "").status, 401);
  HttpReply wrong = post(body, "sk-wrong-00000001");
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(nlohmann::json::parse(wrong.body)["error"]["code"], "invalid_api_key");
  EXPECT_EQ(generate("").status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(generate("sk-wrong-00000001").status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(FrontendTlsKeysTest, AKeyOverItsRequestsPerMinuteIs429OnHttpAndResourceExhaustedOnGrpc) {
  serve(std::string(kLimitedKey) + " rpm=2\n" + kOpenKey + "\n");
  const std::string body = R"({"model":"stories260K","prompt":"Once"})";
  // the key's two requests a minute, one on each front end.
  EXPECT_EQ(post(body, kLimitedKey).status, 200);
  EXPECT_TRUE(generate(kLimitedKey).status.ok());

  HttpReply limited = post(body, kLimitedKey);
  EXPECT_EQ(limited.status, 429);
  const int retry_after = std::atoi(limited.header("Retry-After").c_str());
  EXPECT_GE(retry_after, 1);
  EXPECT_LE(retry_after, 30);  // one request a half minute
  nlohmann::json error = nlohmann::json::parse(limited.body)["error"];
  EXPECT_EQ(error["type"], "requests");
  EXPECT_EQ(error["code"], "rate_limit_exceeded");
  EXPECT_NE(error["message"].get<std::string>().find("Limit 2"), std::string::npos);

  GrpcResult exhausted = generate(kLimitedKey);
  EXPECT_EQ(exhausted.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_GE(std::atoi(exhausted.retry_after.c_str()), 1);
  EXPECT_LE(std::atoi(exhausted.retry_after.c_str()), 30);

  // other keys are not held back by it.
  EXPECT_EQ(post(body, kOpenKey).status, 200);
  EXPECT_TRUE(generate(kOpenKey).status.ok());
}

TEST_F(FrontendTlsKeysTest, AKeyOverItsTokensPerMinuteIsRefusedUntilItRefills) {
  serve(std::string(kTokensKey) + " tpm=100\n");
  // a request that alone needs more than the minute's tokens is a 400.
  HttpReply too_big = post(R"({"model":"stories260K","prompt":"Once","max_tokens":150})", kTokensKey);
  EXPECT_EQ(too_big.status, 400);
  EXPECT_EQ(nlohmann::json::parse(too_big.body)["error"]["param"], "max_tokens");
  // each costs its prompt + 60: the second overdraws, the third waits.
  const std::string body = R"({"model":"stories260K","prompt":"Once","max_tokens":60})";
  EXPECT_EQ(post(body, kTokensKey).status, 200);
  EXPECT_TRUE(generate(kTokensKey, 60).status.ok());
  HttpReply limited = post(body, kTokensKey);
  EXPECT_EQ(limited.status, 429);
  EXPECT_EQ(nlohmann::json::parse(limited.body)["error"]["type"], "tokens");
  EXPECT_GE(std::atoi(limited.header("Retry-After").c_str()), 1);
  EXPECT_EQ(generate(kTokensKey, 60).status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
}

TEST_F(FrontendTlsKeysTest, TheKeyFileIsReadAgainOnReload) {
  serve(std::string(kOpenKey) + "\n");
  const std::string body = R"({"model":"stories260K","prompt":"Once"})";
  EXPECT_EQ(post(body, kLimitedKey).status, 401);
  tls::testing::writeFile(key_file_, std::string(kLimitedKey) + "\n");
  ASSERT_TRUE(keys_->reload().ok());
  EXPECT_EQ(post(body, kLimitedKey).status, 200);
  EXPECT_TRUE(generate(kLimitedKey).status.ok());
  EXPECT_EQ(post(body, kOpenKey).status, 401);
  EXPECT_EQ(generate(kOpenKey).status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // a broken file keeps the keys in use.
  tls::testing::writeFile(key_file_, "sk-broken-0000001 rpm=\n");
  EXPECT_FALSE(keys_->reload().ok());
  EXPECT_EQ(post(body, kLimitedKey).status, 200);
}

}  // namespace
}  // namespace tandem::router
