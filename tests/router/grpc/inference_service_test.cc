// tandem.v1.Inference on a real gRPC server on loopback, over a
// FakeGenerator, admitted by the same Admission as the HTTP front end: the
// API key from the authorization metadata, capacity (RESOURCE_EXHAUSTED),
// the prompt against the context (INVALID_ARGUMENT), the model.
#include "router/grpc/grpc_server.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "grpcpp/impl/client_unary_call.h"
#include "tandem/v1/inference.grpc.pb.h"
#include "tests/common/http/server_test_util.h"
#include "tests/router/generate/stories_serving.h"
#include "tests/stories_oracle.h"

namespace tandem::router {
namespace {

using generation::FinishReason;

class InferenceServiceTest : public ::testing::Test {
 protected:
  ~InferenceServiceTest() override {
    if (server_ != nullptr) server_->shutdown(std::chrono::milliseconds(0));
    if (admission_ != nullptr) admission_->stop();
  }

  void serve(AdmissionOptions options = {}) {
    admission_ = std::make_unique<Admission>(serving_.context(), std::move(options));
    absl::StatusOr<GrpcServerPtr> server = GrpcServer::start("127.0.0.1", 0, admission_.get());
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    stub_ = tandem::v1::Inference::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(server_->port()), grpc::InsecureChannelCredentials()));
  }

  static tandem::v1::GenerateRequest textRequest(const std::string& text) {
    tandem::v1::GenerateRequest request;
    request.set_model(testing::kModelName);
    request.set_text(text);
    return request;
  }

  // the status a Generate call ends with, after reading all its messages
  // (counted in `messages`).
  grpc::Status generate(const tandem::v1::GenerateRequest& request, const std::string& key = "",
                        int* messages = nullptr) {
    grpc::ClientContext context;
    // a generous deadline: a call admitted by mistake is held by the
    // generator and would never end.
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (!key.empty()) context.AddMetadata("authorization", "Bearer " + key);
    auto reader = stub_->Generate(&context, request);
    tandem::v1::GenerateResponse response;
    int n = 0;
    while (reader->Read(&response)) ++n;
    if (messages != nullptr) *messages = n;
    return reader->Finish();
  }

  // a call of `method` with `body` as its request's bytes, whatever they
  // are (a client with a broken encoder): the status it ends with.
  grpc::Status rawCall(const std::string& method, const std::string& body,
                       grpc::internal::RpcMethod::RpcType type) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    grpc::Slice slice(body);
    grpc::ByteBuffer request(&slice, 1);
    auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                       grpc::InsecureChannelCredentials());
    const grpc::internal::RpcMethod rpc(method.c_str(), type);
    if (type == grpc::internal::RpcMethod::NORMAL_RPC) {
      grpc::ByteBuffer response;
      return grpc::internal::BlockingUnaryCall(channel.get(), rpc, &context, request, &response);
    }
    std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
        grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel.get(), rpc, &context,
                                                                      request));
    grpc::ByteBuffer message;
    while (reader->Read(&message)) {}
    return reader->Finish();
  }

  const tandem::testing::OracleCase& oracle_ = tandem::testing::storiesOracle()[0];
  // the generator's calls give their budget back to the admission.
  testing::StoriesServing serving_;
  std::unique_ptr<Admission> admission_;
  GrpcServerPtr server_;
  std::unique_ptr<tandem::v1::Inference::Stub> stub_;
};

TEST_F(InferenceServiceTest, GenerateNeedsTheApiKeyFromTheAuthorizationMetadata) {
  serve({.api_keys = {"secret"}});
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  grpc::Status missing = generate(textRequest("Once"));
  EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(missing.error_message(), "a valid API key is required: Authorization: Bearer <key>");
  EXPECT_EQ(generate(textRequest("Once"), "wrong").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_TRUE(serving_.generator.submits().empty());
  int messages = 0;
  grpc::Status ok = generate(textRequest("Once"), "secret", &messages);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(messages, 1);
  EXPECT_EQ(serving_.generator.submits().size(), 1u);
}

TEST_F(InferenceServiceTest, ListModelsNeedsTheApiKeyToo) {
  serve({.api_keys = {"secret"}});
  grpc::ClientContext anonymous;
  tandem::v1::ListModelsResponse models;
  EXPECT_EQ(stub_->ListModels(&anonymous, {}, &models).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext keyed;
  keyed.AddMetadata("authorization", "Bearer secret");
  ASSERT_TRUE(stub_->ListModels(&keyed, {}, &models).ok());
  ASSERT_EQ(models.models_size(), 1);
  EXPECT_EQ(models.models(0).id(), testing::kModelName);
}

TEST_F(InferenceServiceTest, APromptBeyondTheContextIsInvalidArgument) {
  serve();
  tandem::v1::GenerateRequest request;
  for (int i = 0; i < 256; ++i) request.mutable_token_ids()->add_ids(5);  // the whole context
  grpc::Status status = generate(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "this model's maximum context length is 256 tokens, but the prompt has 256 tokens");
  // the prompt and max_tokens must fit together.
  request.mutable_token_ids()->mutable_ids()->Truncate(4);
  request.mutable_params()->set_max_tokens(253);
  EXPECT_EQ(generate(request).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(serving_.generator.submits().empty());
}

TEST_F(InferenceServiceTest, APromptOverTheServersLimitIsInvalidArgument) {
  serve({.max_prompt_tokens = 8});
  tandem::v1::GenerateRequest request;
  for (int i = 0; i < 9; ++i) request.mutable_token_ids()->add_ids(5);
  grpc::Status status = generate(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(),
            "this model's maximum context length is 256 tokens, but the prompt has 9 tokens (the "
            "server allows at most 8)");
  EXPECT_TRUE(serving_.generator.submits().empty());
}

TEST_F(InferenceServiceTest, AtCapacityIsResourceExhaustedUntilACallEnds) {
  serve({.max_admitted_seqs = 1});
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .hold = true});
  grpc::ClientContext held_context;
  auto held = stub_->Generate(&held_context, textRequest("Once"));
  tandem::v1::GenerateResponse first;
  ASSERT_TRUE(held->Read(&first));  // admitted and generating
  grpc::Status refused = generate(textRequest("Once"));
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(serving_.metric("tandem:requests_rejected_total{limit=\"seqs\"}"), 1);
  // the held call ends (client cancel): its sequence is free again.
  held_context.TryCancel();
  while (held->Read(&first)) {}
  EXPECT_EQ(held->Finish().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(http::testing::waitUntil([&] { return admission_->admittedSeqs() == 0; },
                                       std::chrono::seconds(10)));
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  EXPECT_TRUE(generate(textRequest("Once")).ok());
}

TEST_F(InferenceServiceTest, TheLastMessageCarriesWhyItEndedAsTheEnumAndAsItsName) {
  serve();
  for (FinishReason reason : {FinishReason::kStop, FinishReason::kLength}) {
    serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .finish = reason});
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto reader = stub_->Generate(&context, textRequest("Once"));
    tandem::v1::GenerateResponse message;
    tandem::v1::GenerateResponse last;
    while (reader->Read(&message)) last = message;
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_EQ(last.finish(), reason == FinishReason::kStop ? tandem::v1::FINISH_REASON_STOP
                                                          : tandem::v1::FINISH_REASON_LENGTH);
    EXPECT_EQ(last.finish_reason(), reason == FinishReason::kStop ? "stop" : "length");
  }
}

TEST_F(InferenceServiceTest, AnEmptyModelNamesTheServedOneAndAnotherIsNotFound) {
  serve();
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  tandem::v1::GenerateRequest request = textRequest("Once");
  request.clear_model();
  EXPECT_TRUE(generate(request).ok());
  request.set_model("gpt-9");
  EXPECT_EQ(generate(request).error_code(), grpc::StatusCode::NOT_FOUND);
}

// gRPC's own deserialization answered these UNIMPLEMENTED with no details
// (the generic reading of "no such method"); the service parses its
// requests itself and says what is wrong.
TEST_F(InferenceServiceTest, ABodyThatDoesNotParseIsInvalidArgumentWithAMessage) {
  serve();
  const std::string bodies[] = {
      std::string("\x00\x01", 2),          // field number 0: no such tag
      std::string("\x12\x05" "ab", 4),       // text: 5 bytes announced, 2 sent
      std::string("\x12\x02\xff\xfe", 4),  // text: not UTF-8
  };
  for (const std::string& body : bodies) {
    grpc::Status status =
        rawCall("/tandem.v1.Inference/Generate", body, grpc::internal::RpcMethod::SERVER_STREAMING);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_EQ(status.error_message(),
              "the request body (" + std::to_string(body.size()) +
                  " bytes) does not parse as tandem.v1.GenerateRequest: not protobuf wire format, "
                  "a truncated field, or a string field that is not UTF-8");
  }
  grpc::Status list = rawCall("/tandem.v1.Inference/ListModels", bodies[1],
                              grpc::internal::RpcMethod::NORMAL_RPC);
  EXPECT_EQ(list.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(list.error_message().find("tandem.v1.ListModelsRequest"), std::string::npos);
  EXPECT_TRUE(serving_.generator.submits().empty());
  // a well-formed body on the same raw path is served.
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  EXPECT_TRUE(rawCall("/tandem.v1.Inference/Generate", textRequest("Once").SerializeAsString(),
                      grpc::internal::RpcMethod::SERVER_STREAMING)
                  .ok());
}

TEST_F(InferenceServiceTest, ASchemaNestedPastTheJsonDepthLimitIsInvalidArgument) {
  serve();
  tandem::v1::GenerateRequest request = textRequest("Once");
  request.mutable_response_format()->set_type(tandem::v1::RESPONSE_FORMAT_TYPE_JSON_SCHEMA);
  request.mutable_response_format()->set_schema(std::string(100000, '[') + std::string(100000, ']'));
  grpc::Status status = generate(request);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "response_format.schema nests deeper than 128 levels");
}

}  // namespace
}  // namespace tandem::router
