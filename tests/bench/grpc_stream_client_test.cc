// The gRPC client against an in-process tandem.v1.Inference service that
// streams a scripted answer.
#include "bench/loadgen/grpc_stream_client.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "tandem/v1/inference.grpc.pb.h"

namespace tandem::bench {
namespace {

using std::chrono::milliseconds;

// one token every 2 ms, max_tokens of them, usage on the last message;
// prompt text "fail" answers RESOURCE_EXHAUSTED.
class ScriptedInference : public v1::Inference::Service {
 public:
  grpc::Status Generate(grpc::ServerContext*, const v1::GenerateRequest* req,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override {
    last_ = *req;
    if (req->text() == "fail") return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "queue full");
    int n = req->params().max_tokens();
    for (int k = 0; k < n; ++k) {
      std::this_thread::sleep_for(milliseconds(2));
      v1::GenerateResponse r;
      r.add_token_ids(100 + k);
      r.set_text(" w" + std::to_string(k));
      if (k + 1 == n) {
        r.set_finish_reason("length");
        r.mutable_usage()->set_prompt_tokens(req->token_ids().ids_size());
        r.mutable_usage()->set_completion_tokens(n);
        r.mutable_usage()->set_cached_tokens(1);
      }
      writer->Write(r);
    }
    return grpc::Status::OK;
  }
  v1::GenerateRequest last_;
};

class GrpcStreamClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(&service_);
    server_ = b.BuildAndStart();
    ASSERT_TRUE(server_ != nullptr);
    auto c = GrpcStreamClient::create("127.0.0.1:" + std::to_string(port_), std::chrono::seconds(10));
    ASSERT_TRUE(c.ok());
    client_ = std::move(*c);
  }
  void TearDown() override {
    client_->shutdown();
    server_->Shutdown();
  }
  StreamResult send(StreamRequest r) {
    std::promise<StreamResult> p;
    client_->start(std::move(r), [&](StreamResult res) { p.set_value(std::move(res)); });
    return p.get_future().get();
  }

  ScriptedInference service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<GrpcStreamClient> client_;
};

TEST_F(GrpcStreamClientTest, StreamsTokensWithTimesAndUsage) {
  StreamRequest r;
  r.api = Api::kGrpc;
  r.model = "m";
  r.prompt_ids = {5, 6, 7};
  r.max_tokens = 4;
  StreamResult res = send(r);
  ASSERT_TRUE(res.ok) << res.error_kind << " " << res.error_message;
  EXPECT_EQ(res.token_times.size(), 4u);
  EXPECT_EQ(res.text, " w0 w1 w2 w3");
  EXPECT_EQ(res.prompt_tokens, 3);
  EXPECT_EQ(res.completion_tokens, 4);
  EXPECT_EQ(res.cached_tokens, 1);
  EXPECT_EQ(res.finish_reason, "length");
  EXPECT_EQ(service_.last_.params().max_tokens(), 4);
  EXPECT_TRUE(service_.last_.params().ignore_eos());
  EXPECT_EQ(service_.last_.token_ids().ids_size(), 3);
  EXPECT_GE(res.token_times.front() - res.start, milliseconds(2));
}

TEST_F(GrpcStreamClientTest, SendsChatAsJoinedText) {
  StreamRequest r;
  r.api = Api::kChat;
  r.messages = {{"user", "a"}, {"assistant", "b"}, {"user", "c"}};
  r.max_tokens = 1;
  ASSERT_TRUE(send(r).ok);
  EXPECT_EQ(service_.last_.text(), "a\nb\nc");
}

TEST_F(GrpcStreamClientTest, ReportsTheStatusCode) {
  StreamRequest r;
  r.prompt_text = "fail";
  r.max_tokens = 2;
  StreamResult res = send(r);
  EXPECT_FALSE(res.ok);
  EXPECT_EQ(res.error_kind, "grpc_RESOURCE_EXHAUSTED");
  EXPECT_EQ(res.error_message, "queue full");
}

}  // namespace
}  // namespace tandem::bench
