// CompletionCall over a FakeGenerator and a recording writer: choices per
// prompt, seeds, echo, logprobs, stop strings, refusals, errors, and a
// client that goes away.
#include "router/generate/completion_call.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"
#include "tests/common/http/server_test_util.h"
#include "tests/fakes/fake_response_writer.h"
#include "tests/router/generate/stories_serving.h"
#include "tests/stories_oracle.h"

namespace tandem::router {
namespace {

using generation::FinishReason;
using tandem::testing::FakeGenerator;
using tandem::testing::FakeResponseWriter;
using tandem::testing::FakeScript;
using testing::StoriesServing;

class CompletionCallTest : public ::testing::Test {
 protected:
  CompletionCallTest() : admission_(serving_.context(), AdmissionOptions{}) {}

  // parses `body` as a completions request, admits it and starts a call.
  std::shared_ptr<FakeResponseWriter> start(const std::string& body,
                                            openai::Endpoint endpoint = openai::Endpoint::kCompletions) {
    auto writer = std::make_shared<FakeResponseWriter>();
    openai::ParseResult parsed = openai::parseGenerationRequest(body, endpoint);
    EXPECT_TRUE(std::holds_alternative<openai::GenerationRequest>(parsed));
    auto request = std::get<openai::GenerationRequest>(std::move(parsed));
    auto prompts = admission_.prepare(request);
    EXPECT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(prompts));
    auto slot = admission_.reserve();
    EXPECT_TRUE(std::holds_alternative<AdmissionSlot>(slot));
    CompletionCall::start(admission_, std::move(std::get<AdmissionSlot>(slot)), std::move(request),
                          std::move(std::get<std::vector<TokenizedPrompt>>(prompts)), writer,
                          CompletionCall::Clock::now());
    return writer;
  }

  static nlohmann::json json(const FakeResponseWriter& writer) {
    return nlohmann::json::parse(writer.answer().body);
  }

  const tandem::testing::OracleCase& oracle_ = tandem::testing::storiesOracle()[0];
  StoriesServing serving_;
  Admission admission_;
};

TEST_F(CompletionCallTest, AnswersOneJsonBodyWithTextAndUsage) {
  serving_.generator.setDefaultScript({.tokens = oracle_.completion_ids, .cached_tokens = 3});
  auto writer = start(R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":48})");
  ASSERT_TRUE(writer->waitDone());
  EXPECT_EQ(writer->answer().status, 200);
  nlohmann::json body = json(*writer);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], oracle_.completion_text);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["prompt_tokens"], oracle_.prompt_ids.size());
  EXPECT_EQ(body["usage"]["completion_tokens"], oracle_.completion_ids.size());
  EXPECT_EQ(serving_.generator.submits()[0].prompt, oracle_.prompt_ids);
  EXPECT_EQ(serving_.generator.submits()[0].params.max_tokens, 48);
  // the slot goes with the call, once the generator dropped its callback.
  EXPECT_TRUE(http::testing::waitUntil([&] { return admission_.pending() == 0; },
                                       std::chrono::seconds(10)));
}

TEST_F(CompletionCallTest, GivesEachChoiceOfASeededRequestItsOwnSeed) {
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  auto writer = start(R"({"model":"stories260K","prompt":["a","b"],"n":2,"seed":7})");
  ASSERT_TRUE(writer->waitDone());
  nlohmann::json body = json(*writer);
  ASSERT_EQ(body["choices"].size(), 4u);
  const auto submits = serving_.generator.submits();
  ASSERT_EQ(submits.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(body["choices"][i]["index"], i);
    EXPECT_EQ(submits[i].params.seed, 7u + i);
  }
  EXPECT_EQ(submits[0].prompt, submits[1].prompt);
  EXPECT_NE(submits[1].prompt, submits[2].prompt);
}

TEST_F(CompletionCallTest, EchoesThePromptBeforeTheCompletion) {
  serving_.generator.setDefaultScript({.tokens = oracle_.completion_ids});
  auto writer = start(R"({"model":"stories260K","prompt":"Once upon a time","echo":true,"max_tokens":48})");
  ASSERT_TRUE(writer->waitDone());
  EXPECT_EQ(json(*writer)["choices"][0]["text"], oracle_.prompt + oracle_.completion_text);
}

TEST_F(CompletionCallTest, EndsAtAStopStringAndCancelsTheGeneration) {
  const std::string stop = oracle_.completion_text.substr(10, 5);
  serving_.generator.setDefaultScript({.tokens = oracle_.completion_ids, .hold = true});
  auto writer = start(R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":48,"stop":")" +
                      stop + R"("})");
  ASSERT_TRUE(writer->waitDone());
  nlohmann::json body = json(*writer);
  EXPECT_EQ(body["choices"][0]["text"],
            oracle_.completion_text.substr(0, oracle_.completion_text.find(stop)));
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(body["choices"][0]["stop_reason"], stop);
  EXPECT_EQ(serving_.generator.cancels(), std::vector<generation::RequestId>{1});
}

TEST_F(CompletionCallTest, StreamsAChunkPerTokenThenUsageThenDone) {
  serving_.generator.setDefaultScript({.tokens = oracle_.completion_ids});
  auto writer = start(
      R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":48,"stream":true,)"
      R"("stream_options":{"include_usage":true}})");
  ASSERT_TRUE(writer->waitDone());
  FakeResponseWriter::Answer answer = writer->answer();
  EXPECT_TRUE(answer.streaming);
  EXPECT_EQ(answer.status, 200);
  std::string text;
  nlohmann::json usage;
  size_t events = 0;
  for (size_t at = 0; (at = answer.body.find("data: ", at)) != std::string::npos; ++events) {
    const size_t end = answer.body.find("\n\n", at);
    const std::string data = answer.body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") continue;
    nlohmann::json chunk = nlohmann::json::parse(data);
    if (!chunk["usage"].is_null()) usage = chunk["usage"];
    if (!chunk["choices"].empty()) text += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, oracle_.completion_text);
  EXPECT_GT(events, 3u);
  EXPECT_EQ(usage["completion_tokens"], oracle_.completion_ids.size());
  EXPECT_TRUE(answer.body.ends_with("data: [DONE]\n\n"));
}

TEST_F(CompletionCallTest, ReportsTheSampledTokensLogprobs) {
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .logprob = -0.25f});
  auto writer = start(R"({"model":"stories260K","prompt":"Once","logprobs":2,"max_tokens":1})");
  ASSERT_TRUE(writer->waitDone());
  nlohmann::json logprobs = json(*writer)["choices"][0]["logprobs"];
  ASSERT_EQ(logprobs["token_logprobs"].size(), 1u);
  EXPECT_EQ(logprobs["token_logprobs"][0], -0.25);
  EXPECT_EQ(logprobs["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(serving_.generator.submits()[0].params.logprobs, 2);
}

TEST_F(CompletionCallTest, ARefusedChoiceCancelsTheAcceptedOnesAndAnswers400) {
  serving_.generator.pushScript({.hold = true});
  serving_.generator.pushScript({.refuse = absl::InvalidArgumentError("token id 99999 is outside")});
  auto writer = start(R"({"model":"stories260K","prompt":"Once","n":2,"stream":true})");
  ASSERT_TRUE(writer->waitDone());
  EXPECT_FALSE(writer->answer().streaming);
  EXPECT_EQ(writer->answer().status, 400);
  nlohmann::json error = json(*writer)["error"];
  EXPECT_EQ(error["message"], "token id 99999 is outside");
  EXPECT_TRUE(error["code"].is_null());
  EXPECT_EQ(serving_.generator.cancels(), std::vector<generation::RequestId>{1});
}

TEST_F(CompletionCallTest, AnUnavailableGeneratorIs503) {
  serving_.generator.pushScript({.refuse = absl::UnavailableError("no healthy decode worker")});
  auto writer = start(R"({"model":"stories260K","prompt":"Once"})");
  ASSERT_TRUE(writer->waitDone());
  EXPECT_EQ(writer->answer().status, 503);
  EXPECT_EQ(json(*writer)["error"]["message"], "no healthy decode worker");
}

TEST_F(CompletionCallTest, AGeneratorRefusingTheLengthIsContextLengthExceeded) {
  // the generator's own context is shorter than the served model's.
  serving_.generator.setMaxModelLen(4);
  serving_.generator.pushScript({.refuse = absl::InvalidArgumentError("the prompt is long")});
  auto writer = start(R"({"model":"stories260K","prompt":"Once upon a time"})");
  ASSERT_TRUE(writer->waitDone());
  EXPECT_EQ(writer->answer().status, 400);
  EXPECT_EQ(json(*writer)["error"]["code"], "context_length_exceeded");
}

TEST_F(CompletionCallTest, AGeneratorErrorIs500OrAnErrorEventWhenStreaming) {
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .fail = true});
  auto plain = start(R"({"model":"stories260K","prompt":"Once"})");
  ASSERT_TRUE(plain->waitDone());
  EXPECT_EQ(plain->answer().status, 500);
  EXPECT_EQ(json(*plain)["error"]["message"], "the model failed while generating");

  auto streamed = start(R"({"model":"stories260K","prompt":"Once","stream":true})");
  ASSERT_TRUE(streamed->waitDone());
  const std::string body = streamed->answer().body;
  EXPECT_NE(body.find(R"("the model failed while generating")"), std::string::npos) << body;
  EXPECT_TRUE(body.ends_with("data: [DONE]\n\n"));
}

TEST_F(CompletionCallTest, AClientThatGoesAwayCancelsEveryChoice) {
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .hold = true});
  auto writer = start(R"({"model":"stories260K","prompt":"Once","n":3,"stream":true})");
  ASSERT_TRUE(serving_.generator.waitFor([](auto& submits, auto&) { return submits.size() == 3; }));
  writer->disconnect();
  ASSERT_TRUE(serving_.generator.waitFor([](auto&, auto& cancels) { return cancels.size() == 3; }));
  EXPECT_EQ(serving_.generator.cancels(), (std::vector<generation::RequestId>{1, 2, 3}));
  // nothing more is written to a client that left; the call counts as 499.
  EXPECT_FALSE(writer->answer().done);
  EXPECT_EQ(serving_.metric("tandem:requests_total{endpoint=\"completions\",status=\"499\"}"), 1);
}

TEST_F(CompletionCallTest, RecordsLatenciesAndTokensOfACompletedCall) {
  serving_.generator.setDefaultScript({.tokens = oracle_.completion_ids, .cached_tokens = 2});
  auto writer = start(R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":48})");
  ASSERT_TRUE(writer->waitDone());
  EXPECT_EQ(serving_.metric("tandem:time_to_first_token_seconds_count"), 1);
  EXPECT_EQ(serving_.metric("tandem:inter_token_latency_seconds_count"),
            oracle_.completion_ids.size() - 1);
  EXPECT_EQ(serving_.metric("tandem:generation_tokens_total"), oracle_.completion_ids.size());
  EXPECT_EQ(serving_.metric("tandem:requests_total{endpoint=\"completions\",status=\"200\"}"), 1);
  EXPECT_EQ(serving_.metric("tandem:requests_in_flight"), 0);
}

// the data of every SSE event of a streamed body, [DONE] left out.
std::vector<nlohmann::json> sseChunks(const std::string& body) {
  std::vector<nlohmann::json> chunks;
  for (size_t at = 0; (at = body.find("data: ", at)) != std::string::npos;) {
    const size_t end = body.find("\n\n", at);
    const std::string data = body.substr(at + 6, end - at - 6);
    at = end;
    if (data != "[DONE]") chunks.push_back(nlohmann::json::parse(data));
  }
  return chunks;
}

TEST_F(CompletionCallTest, EchoWithLogprobsLeadsWithThePromptsTokensTheFirstNull) {
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0], oracle_.completion_ids[1]}});
  auto writer = start(R"({"model":"stories260K","prompt":")" + oracle_.prompt +
                      R"(","echo":true,"logprobs":1,"max_tokens":2})");
  ASSERT_TRUE(writer->waitDone());
  const nlohmann::json choice = json(*writer)["choices"][0];
  const nlohmann::json& lp = choice["logprobs"];
  const size_t n = oracle_.prompt_ids.size();
  ASSERT_EQ(lp["tokens"].size(), n + 2);
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  std::string joined;
  for (size_t i = 0; i < n; ++i) {
    // text_offset walks the echoed prompt: each token's text starts there.
    EXPECT_EQ(lp["text_offset"][i], joined.size()) << i;
    joined += lp["tokens"][i].get<std::string>();
    if (i == 0) continue;
    EXPECT_DOUBLE_EQ(lp["token_logprobs"][i].get<double>(), -0.125 * static_cast<double>(i));
    EXPECT_EQ(lp["top_logprobs"][i].size(), 1u);
  }
  EXPECT_EQ(joined, oracle_.prompt);
  EXPECT_EQ(lp["text_offset"][n], oracle_.prompt.size());
  EXPECT_EQ(choice["text"].get<std::string>().substr(0, oracle_.prompt.size()), oracle_.prompt);
  EXPECT_EQ(serving_.generator.submits()[0].params.prompt_logprobs, 1);
}

// lm-evaluation-harness's loglikelihood request: token-id prompts, echo,
// logprobs 1, max_tokens 0.
TEST_F(CompletionCallTest, MaxTokensZeroWithEchoScoresEachPromptAndGeneratesNothing) {
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  const nlohmann::json ids = oracle_.prompt_ids;
  const nlohmann::json other(std::vector<int32_t>(oracle_.prompt_ids.begin(), oracle_.prompt_ids.begin() + 3));
  auto writer = start(R"({"model":"stories260K","echo":true,"logprobs":1,"max_tokens":0,"temperature":0,)"
                      R"("prompt":[)" + ids.dump() + "," + other.dump() + "]}");
  ASSERT_TRUE(writer->waitDone());
  const nlohmann::json body = json(*writer);
  ASSERT_EQ(body["choices"].size(), 2u);
  for (int c = 0; c < 2; ++c) {
    const nlohmann::json& choice = body["choices"][c];
    const size_t n = c == 0 ? oracle_.prompt_ids.size() : 3;
    EXPECT_EQ(choice["finish_reason"], "length");
    EXPECT_EQ(choice["logprobs"]["token_logprobs"].size(), n);
    EXPECT_TRUE(choice["logprobs"]["token_logprobs"][0].is_null());
    EXPECT_DOUBLE_EQ(choice["logprobs"]["token_logprobs"][n - 1].get<double>(),
                     -0.125 * static_cast<double>(n - 1));
  }
  EXPECT_EQ(body["choices"][0]["text"], oracle_.prompt);
  EXPECT_EQ(body["usage"]["completion_tokens"], 0);
  // the generator was asked for one token per prompt; none is shown.
  EXPECT_EQ(serving_.generator.submits()[0].params.max_tokens, 1);

  auto streamed = start(R"({"model":"stories260K","echo":true,"logprobs":1,"max_tokens":0,"stream":true,)"
                        R"("prompt":)" + ids.dump() + "}");
  ASSERT_TRUE(streamed->waitDone());
  const std::vector<nlohmann::json> chunks = sseChunks(streamed->answer().body);
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0]["choices"][0]["text"], oracle_.prompt);
  EXPECT_EQ(chunks[0]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(chunks[0]["choices"][0]["logprobs"]["text_offset"][0], 0);
  EXPECT_EQ(chunks[0]["choices"][0]["logprobs"]["tokens"].size(), oracle_.prompt_ids.size());
}

TEST_F(CompletionCallTest, PromptLogprobsAnswerVllmsShapeOnTheChoiceOrTheChatResponse) {
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  auto writer = start(R"({"model":"stories260K","prompt":"Once upon a time","prompt_logprobs":2})");
  ASSERT_TRUE(writer->waitDone());
  const nlohmann::json choice = json(*writer)["choices"][0];
  EXPECT_TRUE(choice["logprobs"].is_null());
  const nlohmann::json& scores = choice["prompt_logprobs"];
  ASSERT_EQ(scores.size(), oracle_.prompt_ids.size());
  EXPECT_TRUE(scores[0].is_null());
  const int32_t second = oracle_.prompt_ids[1];
  // the token itself (rank 1 in the fake), and the next most likely one.
  ASSERT_EQ(scores[1].size(), 2u);
  const nlohmann::json& self = scores[1][std::to_string(second)];
  EXPECT_DOUBLE_EQ(self["logprob"].get<double>(), -0.125);
  EXPECT_EQ(self["rank"], 1);
  EXPECT_EQ(self["decoded_token"], oracle_.prompt.substr(0, self["decoded_token"].get<std::string>().size()));
  EXPECT_EQ(scores[1][std::to_string(second + 1)]["rank"], 2);
  EXPECT_EQ(serving_.generator.submits()[0].params.prompt_logprobs, 2);

  auto chat = start(R"({"model":"stories260K","messages":[{"role":"user","content":"Once"}],)"
                    R"("prompt_logprobs":0})", openai::Endpoint::kChatCompletions);
  ASSERT_TRUE(chat->waitDone());
  const nlohmann::json body = json(*chat);
  ASSERT_TRUE(body["prompt_logprobs"].is_array());
  EXPECT_TRUE(body["prompt_logprobs"][0].is_null());
  EXPECT_EQ(body["prompt_logprobs"][1].size(), 1u);
  EXPECT_FALSE(body["choices"][0].contains("prompt_logprobs"));
}

}  // namespace
}  // namespace tandem::router
