// Each request limit (generation/request_limits.h) through the real `tandem
// serve`, disaggregated (router + a prefill and a decode worker) and in one
// process: the refusal reaches HTTP as a 400 and gRPC as INVALID_ARGUMENT
// with one and the same message, the rule's, whichever layer checked it
// (the admission: context, prompt length, budget; the generator: the
// vocabulary and the cache, reported by the workers or the engine).
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tandem/v1/inference.grpc.pb.h"
#include "tests/cli/serve_process.h"

namespace tandem {
namespace {

using nlohmann::json;

struct Refusal {
  int http_status = 0;
  std::string http_message;
  std::string http_code;
  grpc::StatusCode grpc_code = grpc::StatusCode::OK;
  std::string grpc_message;
};

class ServeRequestLimitsTest : public ::testing::TestWithParam<std::vector<std::string>> {
 protected:
  void SetUp() override {
    std::vector<std::string> args = {"--threads", "1", "--max-prompt-tokens", "40",
                                     "--max-admitted-prompt-tokens", "30", "--kv-budget", "300K"};
    args.insert(args.end(), GetParam().begin(), GetParam().end());
    absl::StatusOr<std::unique_ptr<testing::ServeProcess>> serve = testing::ServeProcess::start(args);
    ASSERT_TRUE(serve.ok()) << serve.status();
    serve_ = std::move(*serve);
    stub_ = tandem::v1::Inference::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(serve_->grpcPort()), grpc::InsecureChannelCredentials()));
  }

  // the same prompt (token ids) and max_tokens over HTTP and gRPC.
  Refusal refuse(const std::vector<int32_t>& prompt, int max_tokens) {
    Refusal r;
    const json body = {{"model", "stories260K"}, {"prompt", prompt}, {"max_tokens", max_tokens}};
    auto response = serve_->post("/v1/completions", body.dump());
    EXPECT_TRUE(response.has_value());
    if (response) {
      r.http_status = response->status;
      const json error = json::parse(response->body, nullptr, false);
      if (error.contains("error")) {
        r.http_message = error["error"].value("message", "");
        if (error["error"]["code"].is_string()) r.http_code = error["error"]["code"];
      }
    }
    tandem::v1::GenerateRequest request;
    request.mutable_token_ids()->mutable_ids()->Assign(prompt.begin(), prompt.end());
    request.mutable_params()->set_max_tokens(max_tokens);
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    auto reader = stub_->Generate(&context, request);
    tandem::v1::GenerateResponse msg;
    while (reader->Read(&msg)) {
    }
    const grpc::Status status = reader->Finish();
    r.grpc_code = status.error_code();
    r.grpc_message = status.error_message();
    return r;
  }

  void expectRefused(const Refusal& r, const std::string& message) {
    EXPECT_EQ(r.http_status, 400);
    EXPECT_EQ(r.grpc_code, grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(r.http_message, message);
    EXPECT_EQ(r.grpc_message, message);
  }

  // the workers (or the engine) are registered and routable: a small
  // request goes through.
  void waitUntilServing() {
    for (int i = 0; i < 300; ++i) {
      auto ok = serve_->post("/v1/completions",
                             json({{"model", "stories260K"}, {"prompt", {1, 2}}, {"max_tokens", 1}}).dump());
      if (ok && ok->status == 200) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    FAIL() << "the server did not start serving";
  }

  std::unique_ptr<testing::ServeProcess> serve_;
  std::unique_ptr<tandem::v1::Inference::Stub> stub_;
};

TEST_P(ServeRequestLimitsTest, EachLimitReachesHttpAndGrpcWithOneMessage) {
  waitUntilServing();

  const Refusal context = refuse(std::vector<int32_t>(600, 5), 1);
  expectRefused(context,
                "this model's maximum context length is 512 tokens, but the prompt has 600 tokens");
  EXPECT_EQ(context.http_code, "context_length_exceeded");

  const Refusal prompt = refuse(std::vector<int32_t>(41, 5), 1);
  expectRefused(prompt,
                "this model's maximum context length is 512 tokens, but the prompt has 41 tokens "
                "(the server allows at most 40)");
  EXPECT_EQ(prompt.http_code, "context_length_exceeded");

  expectRefused(refuse(std::vector<int32_t>(35, 5), 1),
                "the request's prompts hold 35 tokens over its 1 sequences; the server admits at "
                "most 30 prompt tokens at once");

  expectRefused(refuse({1, 600}, 1), "prompt token id 600 is outside the vocabulary [0, 512)");

  const Refusal cache = refuse(std::vector<int32_t>(10, 5), 400);
  EXPECT_EQ(cache.http_status, 400);
  EXPECT_EQ(cache.grpc_code, grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(cache.http_message, cache.grpc_message);
  EXPECT_EQ(cache.http_message.rfind("prompt (10 tokens) plus max_tokens (400) needs 409 tokens of "
                                     "kv cache but a cache holds only ",
                                     0),
            0u)
      << cache.http_message;
}

INSTANTIATE_TEST_SUITE_P(
    Serve, ServeRequestLimitsTest,
    ::testing::Values(std::vector<std::string>{},
                      std::vector<std::string>{"--decode-workers", "0", "--prefill-workers", "0"}),
    [](const auto& info) { return info.param.empty() ? "Disaggregated" : "InOneProcess"; });

}  // namespace
}  // namespace tandem
