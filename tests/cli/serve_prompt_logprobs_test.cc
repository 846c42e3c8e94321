// Prompt scoring through the real `tandem serve` (router + a prefill and a
// decode worker, each its own process) with lm-evaluation-harness's
// loglikelihood request — token-id prompts, echo, logprobs 1, max_tokens 0
// — and through gRPC: every prompt token's logprob equals (within 1e-4) the
// log-softmax of the model's own logits for that prefix, computed here with
// the model runner on the embedded model, one prefix at a time. The
// workers are told to prefill remotely everything (--max-local-prefill-tokens
// 0): a scoring request is prefilled by the decode worker all the same.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "grpcpp/grpcpp.h"
#include "kernels/cpu/cpu_backend.h"
#include "nlohmann/json.hpp"
#include "server/engine/model_runner.h"
#include "tandem/v1/inference.grpc.pb.h"
#include "tests/cli/serve_process.h"
#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem {
namespace {

using nlohmann::json;

// the model's log-probability of each prompt token given the ones before
// it (index 0: none), and the largest log-probability at each position.
struct Expected {
  std::vector<double> token;
  std::vector<double> best;
};

class ServePromptLogprobsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<testing::ServeProcess>> serve =
        testing::ServeProcess::start({"--max-local-prefill-tokens", "0", "--threads", "2"});
    ASSERT_TRUE(serve.ok()) << serve.status();
    serve_ = std::move(*serve).release();
  }
  static void TearDownTestSuite() {
    delete serve_;
    serve_ = nullptr;
  }

  // the model runner's logits for each prefix of `prompt`, alone.
  static Expected expected(const std::vector<int32_t>& prompt) {
    auto weights = model::ModelWeights::load(testing::storiesGguf());
    EXPECT_TRUE(weights.ok()) << weights.status();
    auto backend = kernels::cpu::CpuBackend::create({.num_threads = 1});
    EXPECT_TRUE(backend.ok());
    constexpr int kBlockSize = 16;
    const int blocks = static_cast<int>(prompt.size()) / kBlockSize + 1;
    auto runner = engine::ModelRunner::create(**weights, **backend, blocks, kBlockSize);
    EXPECT_TRUE(runner.ok()) << runner.status();
    std::vector<int32_t> table(blocks);
    for (int b = 0; b < blocks; ++b) table[b] = b;
    Expected out{{0.0}, {0.0}};
    std::vector<float> logits;
    for (size_t i = 1; i < prompt.size(); ++i) {
      engine::Batch batch{{{1, {prompt.begin(), prompt.begin() + i}, 0, table, true}}};
      EXPECT_TRUE((*runner)->forward(batch, &logits).ok());
      const double max = *std::max_element(logits.begin(), logits.end());
      double sum = 0;
      for (float x : logits) sum += std::exp(static_cast<double>(x) - max);
      const double lse = max + std::log(sum);
      out.token.push_back(logits[prompt[i]] - lse);
      out.best.push_back(max - lse);
    }
    return out;
  }

  static testing::ServeProcess* serve_;
};

testing::ServeProcess* ServePromptLogprobsTest::serve_ = nullptr;

TEST_F(ServePromptLogprobsTest, LmEvalLoglikelihoodRequestsGetTheModelsOwnLogprobs) {
  const auto& oracle = testing::storiesOracle();
  json prompts = json::array();
  for (int c = 0; c < 3; ++c) prompts.push_back(oracle[c].prompt_ids);
  const json request = {{"model", "stories260K"}, {"prompt", prompts}, {"echo", true},
                        {"logprobs", 1},          {"max_tokens", 0},   {"temperature", 0}};
  auto response = serve_->post("/v1/completions", request.dump());
  ASSERT_TRUE(response.has_value());
  ASSERT_EQ(response->status, 200) << response->body;
  const json body = json::parse(response->body);
  ASSERT_EQ(body["choices"].size(), 3u);
  EXPECT_EQ(body["usage"]["completion_tokens"], 0);
  for (int c = 0; c < 3; ++c) {
    const std::vector<int32_t>& prompt = oracle[c].prompt_ids;
    const Expected want = expected(prompt);
    const json& choice = body["choices"][c];
    EXPECT_EQ(choice["finish_reason"], "length");
    const json& lp = choice["logprobs"];
    ASSERT_EQ(lp["token_logprobs"].size(), prompt.size());
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    for (size_t i = 1; i < prompt.size(); ++i) {
      EXPECT_NEAR(lp["token_logprobs"][i].get<double>(), want.token[i], 1e-4) << c << ":" << i;
      ASSERT_EQ(lp["top_logprobs"][i].size(), 1u);
      EXPECT_NEAR(lp["top_logprobs"][i].begin()->get<double>(), want.best[i], 1e-4) << c << ":" << i;
    }
  }
  // the decode worker prefilled them itself, although the router sends
  // every other prompt to the prefill worker.
  auto metrics = serve_->get("/metrics");
  ASSERT_TRUE(metrics.has_value());
  EXPECT_NE(metrics->body.find("tandem:router_prefills_total{kind=\"local\"} 3"), std::string::npos)
      << metrics->body;
  EXPECT_NE(metrics->body.find("tandem:router_prefills_total{kind=\"remote\"} 0\n"), std::string::npos);
}

TEST_F(ServePromptLogprobsTest, GrpcPromptLogprobsAreTheSame) {
  const std::vector<int32_t>& prompt = testing::storiesOracle()[3].prompt_ids;
  auto stub = tandem::v1::Inference::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(serve_->grpcPort()), grpc::InsecureChannelCredentials()));
  tandem::v1::GenerateRequest request;
  request.mutable_token_ids()->mutable_ids()->Assign(prompt.begin(), prompt.end());
  request.mutable_params()->set_max_tokens(0);
  request.mutable_params()->set_prompt_logprobs(2);
  grpc::ClientContext context;
  auto reader = stub->Generate(&context, request);
  std::vector<tandem::v1::PromptLogprob> scores;
  tandem::v1::GenerateResponse msg;
  std::string finish;
  int tokens = 0;
  while (reader->Read(&msg)) {
    scores.insert(scores.end(), msg.prompt_logprobs().begin(), msg.prompt_logprobs().end());
    tokens += msg.token_ids_size();
    if (!msg.finish_reason().empty()) finish = msg.finish_reason();
  }
  ASSERT_TRUE(reader->Finish().ok());
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(tokens, 0);
  const Expected want = expected(prompt);
  ASSERT_EQ(scores.size(), prompt.size());
  EXPECT_EQ(scores[0].token_id(), prompt[0]);
  EXPECT_FALSE(scores[0].has_logprob());
  for (size_t i = 1; i < prompt.size(); ++i) {
    EXPECT_EQ(scores[i].token_id(), prompt[i]);
    EXPECT_NEAR(scores[i].logprob(), want.token[i], 1e-4) << i;
    ASSERT_EQ(scores[i].top_size(), 2);
    EXPECT_NEAR(scores[i].top(0).logprob(), want.best[i], 1e-4) << i;
    EXPECT_GE(scores[i].rank(), 1);
  }
}

}  // namespace
}  // namespace tandem
