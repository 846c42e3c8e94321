// OpenAiService behind a real HTTP server on port 0, over a FakeGenerator:
// the routes, API keys, admission (400/404/429/503, sequences not
// requests), preparation off the I/O thread, streamed and plain answers,
// and clients that go away.
#include "router/generate/openai_service.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "nlohmann/json.hpp"
#include "tests/common/http/raw_client.h"
#include "tests/common/http/server_test_util.h"
#include "tests/router/generate/stories_serving.h"
#include "tests/test_paths.h"
#include "tests/stories_oracle.h"

namespace tandem::router {
namespace {

using generation::FinishReason;
using http::testing::RawClient;
using http::testing::RawResponse;
using tandem::testing::FakeScript;

// the model's tokenizer, whose encode() waits while the gate is closed (and
// says that it does): a tokenization as slow as the test wants.
class GatedTokenizer final : public tokenizer::Tokenizer {
 public:
  explicit GatedTokenizer(tokenizer::TokenizerPtr inner) : inner_(std::move(inner)) {}

  void close() {
    std::lock_guard lock(mu_);
    open_ = false;
  }
  void open() {
    {
      std::lock_guard lock(mu_);
      open_ = true;
    }
    changed_.notify_all();
  }
  // waits until an encode() is held at the closed gate.
  bool waitHeld() {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return held_ > 0; });
  }

  // tokenizer::Tokenizer
  std::vector<tokenizer::TokenId> encode(std::string_view text, bool add_special) const override {
    {
      std::unique_lock lock(mu_);
      ++held_;
      changed_.notify_all();
      changed_.wait(lock, [&] { return open_; });
      --held_;
    }
    return inner_->encode(text, add_special);
  }
  std::string decode(const std::vector<tokenizer::TokenId>& ids, bool skip_special) const override {
    return inner_->decode(ids, skip_special);
  }
  std::string tokenBytes(tokenizer::TokenId id) const override { return inner_->tokenBytes(id); }
  size_t maxInputBytesPerToken() const override { return inner_->maxInputBytesPerToken(); }
  int vocabSize() const override { return inner_->vocabSize(); }
  bool isSpecial(tokenizer::TokenId id) const override { return inner_->isSpecial(id); }
  std::optional<tokenizer::TokenId> tokenToId(std::string_view token) const override {
    return inner_->tokenToId(token);
  }
  std::optional<tokenizer::TokenId> bosId() const override { return inner_->bosId(); }
  std::optional<tokenizer::TokenId> eosId() const override { return inner_->eosId(); }
  std::string kind() const override { return inner_->kind(); }

 private:
  const tokenizer::TokenizerPtr inner_;
  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  bool open_ = true;      // guarded by mu_
  mutable int held_ = 0;  // guarded by mu_
};

class OpenAiServiceTest : public ::testing::Test {
 protected:
  // the preparing threads may still answer a call: they stop before the
  // service and the model go.
  ~OpenAiServiceTest() override {
    if (server_ != nullptr) server_->shutdown(std::chrono::milliseconds(0));
    if (admission_ != nullptr) admission_->stop();
  }

  // starts the service on a server on port 0 (`io_threads` I/O threads),
  // ready unless told otherwise.
  void serve(AdmissionOptions options = {}, bool ready = true, int io_threads = 2) {
    service_ = std::make_unique<OpenAiService>(&serving_.metrics);
    admission_ = std::make_unique<Admission>(serving_.context(), std::move(options));
    http::HttpServerOptions http;
    http.num_threads = io_threads;
    http.error_body = openai::serverErrorBody;
    server_ = http::testing::startServer(http, service_->handler());
    ASSERT_NE(server_, nullptr);
    if (ready) service_->setReady(admission_.get());
  }

  std::unique_ptr<RawClient> connect() {
    auto client = RawClient::connect(server_->port());
    EXPECT_NE(client, nullptr);
    return client;
  }

  RawResponse get(const std::string& path, const std::string& headers = "") {
    return exchange(http::testing::getRequest(path, headers));
  }
  RawResponse post(const std::string& path, const std::string& body,
                   const std::string& headers = "") {
    return exchange(http::testing::postRequest(path, body, headers));
  }
  RawResponse exchange(const std::string& bytes) {
    auto client = connect();
    if (client == nullptr) return {};
    EXPECT_TRUE(client->send(bytes));
    std::optional<RawResponse> r = client->readResponse(std::chrono::seconds(10));
    EXPECT_TRUE(r.has_value());
    return r.value_or(RawResponse{});
  }

  static nlohmann::json error(const RawResponse& r) {
    nlohmann::json body = nlohmann::json::parse(r.body, nullptr, false);
    EXPECT_TRUE(body.contains("error")) << r.body;
    return body.contains("error") ? body["error"] : nlohmann::json();
  }

  const tandem::testing::OracleCase& oracle_ = tandem::testing::storiesOracle()[0];
  // the service and the admission outlive the calls the generator still holds.
  std::unique_ptr<OpenAiService> service_;
  std::unique_ptr<Admission> admission_;
  testing::StoriesServing serving_;
  http::HttpServerPtr server_;
};

TEST_F(OpenAiServiceTest, AnswersACompletion) {
  serve();
  serving_.generator.setDefaultScript({.tokens = oracle_.completion_ids});
  RawResponse r = post("/v1/completions",
                       R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":48})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  nlohmann::json body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["model"], "stories260K");
  EXPECT_EQ(body["choices"][0]["text"], oracle_.completion_text);
  EXPECT_EQ(body["usage"]["completion_tokens"], 48);
}

TEST_F(OpenAiServiceTest, StreamsSseChunksThenUsageThenDone) {
  serve();
  serving_.generator.setDefaultScript({.tokens = oracle_.completion_ids});
  RawResponse r = post("/v1/completions",
                       R"({"model":"stories260K","prompt":"Once upon a time","max_tokens":48,)"
                       R"("stream":true,"stream_options":{"include_usage":true}})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type"), "text/event-stream");
  EXPECT_TRUE(r.body.starts_with("data: {"));
  EXPECT_NE(r.body.find(R"("completion_tokens":48)"), std::string::npos);
  EXPECT_TRUE(r.body.ends_with("data: [DONE]\n\n")) << r.body;
}

TEST_F(OpenAiServiceTest, AnswersAChatCompletionWithTheRenderedPrompt) {
  serve();
  serving_.generator.setDefaultScript({.tokens = oracle_.completion_ids, .finish = FinishReason::kStop});
  RawResponse r = post("/v1/chat/completions",
                       R"({"model":"stories260K","messages":[{"role":"user","content":"Once upon a time"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json body = nlohmann::json::parse(r.body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["choices"][0]["message"]["content"], oracle_.completion_text);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "stop");
  // the plain template: BOS, then the message.
  EXPECT_EQ(serving_.generator.submits()[0].prompt, oracle_.prompt_ids);
}

TEST_F(OpenAiServiceTest, AnswersNChoices) {
  serve();
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"Once","n":3})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["choices"].size(), 3u);
  EXPECT_EQ(serving_.generator.submits().size(), 3u);
}

TEST_F(OpenAiServiceTest, EndsAChoiceAtAStopString) {
  serve();
  const std::string stop = oracle_.completion_text.substr(10, 5);
  serving_.generator.setDefaultScript({.tokens = oracle_.completion_ids, .hold = true});
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"Once upon a time",)"
                                          R"("max_tokens":48,"stop":[")" + stop + R"("]})");
  ASSERT_EQ(r.status, 200) << r.body;
  nlohmann::json choice = nlohmann::json::parse(r.body)["choices"][0];
  EXPECT_EQ(choice["text"], oracle_.completion_text.substr(0, oracle_.completion_text.find(stop)));
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_EQ(serving_.generator.cancels().size(), 1u);
}

TEST_F(OpenAiServiceTest, ABadParameterIs400NamingIt) {
  serve();
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"x","temperature":-1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error(r)["param"], "temperature");
  EXPECT_TRUE(serving_.generator.submits().empty());
}

TEST_F(OpenAiServiceTest, APromptBeyondTheContextIs400ContextLengthExceeded) {
  serve();
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":")" +
                                              std::string(2000, 'a') + R"("})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error(r)["code"], "context_length_exceeded");
  EXPECT_EQ(error(r)["param"], "prompt");
  r = post("/v1/completions", R"({"model":"stories260K","prompt":"Hi","max_tokens":10000})");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error(r)["code"], "context_length_exceeded");
  EXPECT_EQ(error(r)["param"], "max_tokens");
  EXPECT_TRUE(serving_.generator.submits().empty());
}

TEST_F(OpenAiServiceTest, RequiresAKeyOnTheApiButNotOnProbes) {
  serve({.api_keys = {"secret"}});
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"x"})");
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(r.header("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(error(r)["code"], "invalid_api_key");
  EXPECT_EQ(get("/v1/models", "Authorization: Bearer wrong\r\n").status, 401);
  EXPECT_EQ(get("/v1/models", "Authorization: Bearer secret\r\n").status, 200);
  EXPECT_EQ(get("/health").status, 200);
  EXPECT_EQ(get("/metrics").status, 200);
}

TEST_F(OpenAiServiceTest, UnknownModelsAndRoutesAre404AndWrongMethods405) {
  serve();
  RawResponse r = post("/v1/completions", R"({"model":"gpt-9","prompt":"x"})");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(error(r)["param"], "model");
  EXPECT_EQ(get("/v2/everything").status, 404);
  EXPECT_EQ(post("/live", "").status, 404);
  EXPECT_EQ(get("/v1/models/gpt-9").status, 404);
  EXPECT_EQ(get("/v1/completions").status, 405);
  EXPECT_EQ(post("/v1/models", "").status, 405);
  r = get("/v1/models/stories260K");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(nlohmann::json::parse(r.body)["id"], "stories260K");
  r = get("/v1/models");
  ASSERT_EQ(r.status, 200);
  const nlohmann::json card = nlohmann::json::parse(r.body)["data"][0];
  EXPECT_EQ(card["id"], "stories260K");
  // the model's id, as vLLM: never the server's path to the file.
  EXPECT_EQ(card["root"], "stories260K");
  EXPECT_EQ(r.body.find(tandem::testing::storiesGguf()), std::string::npos);
}

TEST_F(OpenAiServiceTest, AGeneratorThatShedsTheRequestIs429WithRetryAfter) {
  // the router's planner: no worker can start it within the TTFT SLO.
  serve();
  serving_.generator.setDefaultScript({.refuse = absl::ResourceExhaustedError("no worker meets the SLO")});
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"Once","stream":true})");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_EQ(error(r)["code"], "rate_limit_exceeded");
}

TEST_F(OpenAiServiceTest, OverCapacityIs429WithRetryAfter) {
  serve({.max_pending_requests = 1});
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .hold = true});
  auto first = connect();
  ASSERT_TRUE(first->send(http::testing::postRequest(
      "/v1/completions", R"({"model":"stories260K","prompt":"Once","stream":true})")));
  ASSERT_TRUE(first->readHead(std::chrono::seconds(10)).has_value());
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"Once"})");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_EQ(error(r)["code"], "rate_limit_exceeded");
  EXPECT_EQ(serving_.metric("tandem:requests_rejected_total{limit=\"requests\"}"), 1);
  // the first one finishes; its slot is free again.
  serving_.generator.finish(1, FinishReason::kLength);
  ASSERT_TRUE(http::testing::waitUntil([&] { return admission_->pending() == 0; },
                                       std::chrono::seconds(10)));
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  EXPECT_EQ(post("/v1/completions", R"({"model":"stories260K","prompt":"Once"})").status, 200);
}

TEST_F(OpenAiServiceTest, Answers503UntilReadyAndWhileTheGeneratorIsNot) {
  serve({}, /*ready=*/false);
  EXPECT_EQ(get("/live").status, 200);
  EXPECT_EQ(get("/health").status, 503);
  EXPECT_EQ(post("/v1/completions", R"({"model":"stories260K","prompt":"x"})").status, 503);
  service_->setReady(admission_.get());
  EXPECT_EQ(get("/health").status, 200);
  serving_.generator.setReady(false);
  EXPECT_EQ(get("/health").status, 503);
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"x"})");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(error(r)["message"], "the backend is not ready");
}

TEST_F(OpenAiServiceTest, Answers503WhileDraining) {
  serve();
  service_->setDraining();
  EXPECT_EQ(get("/health").status, 503);
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"x"})");
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(error(r)["message"], "the server is shutting down");
  EXPECT_TRUE(serving_.generator.submits().empty());
}

TEST_F(OpenAiServiceTest, AClientThatDisconnectsCancelsTheGeneration) {
  serve();
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .hold = true});
  auto client = connect();
  ASSERT_TRUE(client->send(http::testing::postRequest(
      "/v1/completions", R"({"model":"stories260K","prompt":"Once","stream":true})")));
  ASSERT_TRUE(client->readHead(std::chrono::seconds(10)).has_value());
  client->close();
  ASSERT_TRUE(serving_.generator.waitFor([](auto&, auto& cancels) { return cancels.size() == 1; }));
  EXPECT_EQ(serving_.generator.cancels()[0], 1u);
  ASSERT_TRUE(http::testing::waitUntil([&] { return admission_->pending() == 0; },
                                       std::chrono::seconds(10)));
}

TEST_F(OpenAiServiceTest, AGeneratorErrorMidStreamEndsTheStreamWithAnErrorEvent) {
  serve();
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0], oracle_.completion_ids[1]},
                                       .fail = true});
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"Once","stream":true})");
  ASSERT_EQ(r.status, 200);
  EXPECT_NE(r.body.find(R"("message":"the model failed while generating")"), std::string::npos)
      << r.body;
  EXPECT_TRUE(r.body.ends_with("data: [DONE]\n\n"));
  EXPECT_EQ(serving_.metric("tandem:requests_total{endpoint=\"completions\",status=\"500\"}"), 1);
}

// a request costs its choices: two streaming requests with n = 4 hold the
// whole budget of 8 sequences, so a third (n = 1) is a 429 until one ends.
TEST_F(OpenAiServiceTest, AdmissionCountsSequencesNotRequests) {
  serve({.max_admitted_seqs = 8});
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}, .hold = true});
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(connect());
    ASSERT_TRUE(held.back()->send(http::testing::postRequest(
        "/v1/completions", R"({"model":"stories260K","prompt":"Once","n":4,"stream":true})")));
    ASSERT_TRUE(held.back()->readHead(std::chrono::seconds(10)).has_value());
  }
  EXPECT_EQ(admission_->admittedSeqs(), 8);
  EXPECT_EQ(admission_->pending(), 2);
  RawResponse r = post("/v1/completions", R"({"model":"stories260K","prompt":"Once"})");
  EXPECT_EQ(r.status, 429);
  EXPECT_EQ(r.header("Retry-After"), "1");
  EXPECT_EQ(serving_.metric("tandem:requests_rejected_total{limit=\"seqs\"}"), 1);
  // the first one's client leaves: its four sequences are free again.
  held[0]->close();
  ASSERT_TRUE(http::testing::waitUntil([&] { return admission_->admittedSeqs() == 4; },
                                       std::chrono::seconds(10)));
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  EXPECT_EQ(post("/v1/completions", R"({"model":"stories260K","prompt":"Once"})").status, 200);
}

// 1024 prompts × n = 128: a 400 before anything is tokenized or submitted,
// and the budget is untouched.
TEST_F(OpenAiServiceTest, ARequestForMoreSequencesThanTheServerAdmitsIs400) {
  serve();
  std::string prompts = "[";
  for (int i = 0; i < openai::GenerationRequest::kMaxPrompts; ++i) {
    prompts += i == 0 ? R"("Once")" : R"(,"Once")";
  }
  prompts += "]";
  RawResponse r = post("/v1/completions",
                       R"({"model":"stories260K","n":128,"prompt":)" + prompts + "}");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(error(r)["param"], "n");
  EXPECT_EQ(error(r)["message"],
            "the request asks for 131072 sequences (1024 prompts, n = 128); the server admits at "
            "most 1024 at once");
  EXPECT_TRUE(serving_.generator.submits().empty());
  EXPECT_EQ(admission_->admittedSeqs(), 0);
  ASSERT_TRUE(http::testing::waitUntil([&] { return admission_->pending() == 0; },
                                       std::chrono::seconds(10)));
}

// with one I/O thread, a request whose tokenization is held does not hold
// the server: /v1/models and /health answer meanwhile.
TEST_F(OpenAiServiceTest, ASlowTokenizationDoesNotHoldTheIoThread) {
  auto tokenizer = tokenizer::Tokenizer::load(tandem::testing::storiesGguf());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto gated = std::make_unique<GatedTokenizer>(std::move(*tokenizer));
  GatedTokenizer* gate = gated.get();
  serving_.model->setTokenizer(std::move(gated));
  serve({}, /*ready=*/true, /*io_threads=*/1);
  serving_.generator.setDefaultScript({.tokens = {oracle_.completion_ids[0]}});
  gate->close();
  auto slow = connect();
  ASSERT_TRUE(slow->send(http::testing::postRequest(
      "/v1/completions", R"({"model":"stories260K","prompt":"Once upon a time"})")));
  ASSERT_TRUE(gate->waitHeld());
  EXPECT_EQ(get("/v1/models").status, 200);
  EXPECT_EQ(get("/health").status, 200);
  gate->open();
  std::optional<RawResponse> r = slow->readResponse(std::chrono::seconds(10));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 200) << r->body;
}

// the body limit is checked on the declared length, before the body is read
// or parsed: an OpenAI error body, nothing submitted.
TEST_F(OpenAiServiceTest, ABodyOverTheLimitIs413BeforeItIsParsed) {
  serve();
  auto client = connect();
  ASSERT_TRUE(client->send(
      "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
      "Content-Length: 104857600\r\n\r\n{\"model\":"));
  std::optional<RawResponse> r = client->readResponse(std::chrono::seconds(10));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(error(*r)["type"], "invalid_request_error");
  // a real body, 5 MiB of prompt: the server may close before it read it
  // all, so the send's result does not matter, the answer does.
  auto sender_client = connect();
  const std::string big = http::testing::postRequest(
      "/v1/completions", R"({"model":"stories260K","prompt":")" + std::string(5 << 20, 'a') + R"("})");
  std::thread sender([&] { sender_client->send(big); });
  std::optional<RawResponse> whole = sender_client->readResponse(std::chrono::seconds(30));
  sender.join();
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->status, 413);
  EXPECT_TRUE(serving_.generator.submits().empty());
  EXPECT_EQ(admission_->pending(), 0);
}

}  // namespace
}  // namespace tandem::router
