// The router's front door over a FakeGenerator: HTTP and gRPC admit through
// one Admission, so one API key list and one capacity budget hold across
// both (a sequence held on gRPC is a 429 on HTTP, and the other way round).
#include "router/frontend/frontend_server.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "router/openai/api_error.h"
#include "tandem/v1/inference.grpc.pb.h"
#include "tests/common/http/raw_client.h"
#include "tests/common/http/server_test_util.h"
#include "tests/fakes/fake_generator.h"
#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem::router {
namespace {

using http::testing::RawClient;
using http::testing::RawResponse;

class FrontendServerTest : public ::testing::Test {
 protected:
  // the calls the generator holds give their budget back to the front
  // end's admission: the generator goes first, once nothing polls it.
  ~FrontendServerTest() override {
    if (frontend_ != nullptr) frontend_->drainAndStop(std::chrono::milliseconds(0));
    generator_.reset();
  }

  void serve(AdmissionOptions admission) {
    FrontendOptions options;
    options.http_port = 0;
    options.grpc_port = 0;
    options.admission = std::move(admission);
    absl::StatusOr<FrontendServerPtr> frontend = FrontendServer::start(options);
    ASSERT_TRUE(frontend.ok()) << frontend.status();
    frontend_ = std::move(*frontend);
    absl::StatusOr<ServedModelPtr> model =
        ServedModel::load(tandem::testing::storiesGguf(), "stories260K", 256);
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE(frontend_->serve(std::move(*model), generator_.get()).ok());
    stub_ = tandem::v1::Inference::NewStub(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(frontend_->grpcPort()),
                            grpc::InsecureChannelCredentials()));
  }

  RawResponse post(const std::string& body, const std::string& headers = "") {
    auto client = RawClient::connect(frontend_->httpPort());
    EXPECT_NE(client, nullptr);
    if (client == nullptr) return {};
    EXPECT_TRUE(client->send(http::testing::postRequest("/v1/completions", body, headers)));
    return client->readResponse(std::chrono::seconds(10)).value_or(RawResponse{});
  }

  // a generous deadline: a call admitted by mistake is held by the
  // generator and would never end.
  static void setDeadline(grpc::ClientContext& context) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  }

  static tandem::v1::GenerateRequest grpcRequest() {
    tandem::v1::GenerateRequest request;
    request.set_text("Once");
    return request;
  }

  // the value of the /metrics sample `name`; -1 when absent.
  double metric(const std::string& name) {
    const std::string text = "\n" + frontend_->metrics().render();
    const size_t at = text.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    const size_t value = at + name.size() + 2;
    return std::stod(text.substr(value, text.find('\n', value) - value));
  }

  const tandem::testing::OracleCase& oracle_ = tandem::testing::storiesOracle()[0];
  FrontendServerPtr frontend_;
  std::unique_ptr<tandem::testing::FakeGenerator> generator_ =
      std::make_unique<tandem::testing::FakeGenerator>();
  std::unique_ptr<tandem::v1::Inference::Stub> stub_;
};

TEST_F(FrontendServerTest, HttpAndGrpcShareOneCapacityBudget) {
  serve({.max_admitted_seqs = 1});
  generator_->setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .hold = true});
  const std::string body = R"({"model":"stories260K","prompt":"Once"})";

  // gRPC holds the one sequence: HTTP is refused.
  auto grpc_context = std::make_unique<grpc::ClientContext>();
  setDeadline(*grpc_context);
  auto held = stub_->Generate(grpc_context.get(), grpcRequest());
  tandem::v1::GenerateResponse message;
  ASSERT_TRUE(held->Read(&message));
  RawResponse r = post(body);
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("Retry-After"), "1");
  grpc_context->TryCancel();
  while (held->Read(&message)) {}
  held->Finish();
  ASSERT_TRUE(http::testing::waitUntil([&] { return metric("tandem:admitted_seqs") == 0; },
                                       std::chrono::seconds(10)));

  // HTTP holds it: gRPC is refused.
  auto client = RawClient::connect(frontend_->httpPort());
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->send(http::testing::postRequest(
      "/v1/completions", R"({"model":"stories260K","prompt":"Once","stream":true})")));
  ASSERT_TRUE(client->readHead(std::chrono::seconds(10)).has_value());
  grpc::ClientContext refused_context;
  setDeadline(refused_context);
  auto refused = stub_->Generate(&refused_context, grpcRequest());
  EXPECT_FALSE(refused->Read(&message));
  EXPECT_EQ(refused->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(metric("tandem:requests_rejected_total{limit=\"seqs\"}"), 2);
  client->close();
  ASSERT_TRUE(http::testing::waitUntil([&] { return metric("tandem:admitted_seqs") == 0; },
                                       std::chrono::seconds(10)));
}

TEST_F(FrontendServerTest, HttpAndGrpcTakeTheSameApiKeys) {
  serve({.api_keys = {"secret"}});
  generator_->setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  const std::string body = R"({"model":"stories260K","prompt":"Once"})";
  EXPECT_EQ(post(body).status, 401);
  EXPECT_EQ(post(body, "Authorization: Bearer secret\r\n").status, 200);
  tandem::v1::GenerateResponse message;
  grpc::ClientContext anonymous;
  auto refused = stub_->Generate(&anonymous, grpcRequest());
  while (refused->Read(&message)) {}
  EXPECT_EQ(refused->Finish().error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext keyed;
  keyed.AddMetadata("authorization", "Bearer secret");
  auto accepted = stub_->Generate(&keyed, grpcRequest());
  while (accepted->Read(&message)) {}
  EXPECT_TRUE(accepted->Finish().ok());
}

}  // namespace
}  // namespace tandem::router
