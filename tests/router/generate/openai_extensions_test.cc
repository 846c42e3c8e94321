// The OpenAI front end's newer surface behind a real HTTP server on port 0,
// over a FakeGenerator and the stories260K tokenizer (plain template, so
// the plain-JSON tool-call family): tool calls parsed from a chat's output
// (whole and streamed as OpenAI's deltas, finish_reason "tool_calls"),
// tool_choice "none", POST /v1/responses (plain, streamed, refused),
// /tokenize and /detokenize, /v1/models/{id}, logit_bias reaching the
// generator, and usage in the last streamed chunk of chat.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nlohmann/json.hpp"
#include "router/generate/openai_service.h"
#include "tests/common/http/raw_client.h"
#include "tests/common/http/server_test_util.h"
#include "tests/router/generate/stories_serving.h"

namespace tandem::router {
namespace {

using generation::FinishReason;
using http::testing::RawClient;
using http::testing::RawResponse;
using Json = nlohmann::json;

class OpenAiExtensionsTest : public ::testing::Test {
 protected:
  OpenAiExtensionsTest() {
    service_ = std::make_unique<OpenAiService>(&serving_.metrics);
    admission_ = std::make_unique<Admission>(serving_.context(), AdmissionOptions{});
    http::HttpServerOptions http;
    http.num_threads = 2;
    http.error_body = openai::serverErrorBody;
    server_ = http::testing::startServer(http, service_->handler());
    service_->setReady(admission_.get());
  }
  ~OpenAiExtensionsTest() override {
    if (server_ != nullptr) server_->shutdown(std::chrono::milliseconds(0));
    if (admission_ != nullptr) admission_->stop();
  }

  RawResponse exchange(const std::string& bytes) {
    auto client = RawClient::connect(server_->port());
    EXPECT_NE(client, nullptr);
    if (client == nullptr) return {};
    EXPECT_TRUE(client->send(bytes));
    std::optional<RawResponse> r = client->readResponse(std::chrono::seconds(10));
    EXPECT_TRUE(r.has_value());
    return r.value_or(RawResponse{});
  }
  RawResponse post(const std::string& path, const std::string& body) {
    return exchange(http::testing::postRequest(path, body));
  }
  RawResponse get(const std::string& path) { return exchange(http::testing::getRequest(path)); }

  // the stories tokens of `text`, as the model would generate them.
  std::vector<int32_t> tokens(const std::string& text) {
    return serving_.model->tokenizer().encode(text, /*add_special=*/false);
  }

  // the JSON of each "data: " line of an SSE body, [DONE] left out.
  static std::vector<Json> dataLines(const std::string& sse) {
    std::vector<Json> out;
    size_t at = 0;
    while ((at = sse.find("data: ", at)) != std::string::npos) {
      const size_t end = sse.find("\n\n", at);
      const std::string data = sse.substr(at + 6, end - at - 6);
      if (data != "[DONE]") out.push_back(Json::parse(data));
      at = end;
    }
    return out;
  }

  std::unique_ptr<OpenAiService> service_;
  std::unique_ptr<Admission> admission_;
  testing::StoriesServing serving_;
  http::HttpServerPtr server_;
};

constexpr char kTools[] =
    R"([{"type":"function","function":{"name":"get_weather","parameters":{"type":"object",)"
    R"("properties":{"city":{"type":"string"}}}}}])";

TEST_F(OpenAiExtensionsTest, AChatOutputThatIsACallComesBackAsToolCalls) {
  serving_.generator.setDefaultScript(
      {.tokens = tokens(R"({"name": "get_weather", "arguments": {"city": "Paris"}})"),
       .finish = FinishReason::kStop});
  RawResponse r = post("/v1/chat/completions",
                       std::string(R"({"model":"stories260K","messages":[{"role":"user","content":"hi"}],"tools":)") +
                           kTools + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  Json choice = Json::parse(r.body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_TRUE(choice["message"]["content"].is_null()) << r.body;
  ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << r.body;
  const Json& call = choice["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(Json::parse(call["function"]["arguments"].get<std::string>()), Json({{"city", "Paris"}}));
  EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_")) << call;
}

TEST_F(OpenAiExtensionsTest, AStreamedCallComesAsDeltasWithTheNameFirst) {
  serving_.generator.setDefaultScript(
      {.tokens = tokens(R"({"name": "get_weather", "arguments": {"city": "Paris"}})"),
       .finish = FinishReason::kStop});
  RawResponse r = post("/v1/chat/completions",
                       std::string(R"({"model":"stories260K","stream":true,"stream_options":{"include_usage":true},)"
                                   R"("messages":[{"role":"user","content":"hi"}],"tools":)") +
                           kTools + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  std::string id, name, arguments, finish;
  int pieces = 0;
  Json usage;
  for (const Json& chunk : dataLines(r.body)) {
    if (!chunk["usage"].is_null()) usage = chunk["usage"];
    for (const Json& choice : chunk["choices"]) {
      if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
      const Json& delta = choice["delta"];
      EXPECT_TRUE(!delta.contains("content") || delta["content"] == "") << chunk;
      if (!delta.contains("tool_calls")) continue;
      for (const Json& piece : delta["tool_calls"]) {
        EXPECT_EQ(piece["index"], 0);
        if (piece.contains("id")) {
          EXPECT_TRUE(id.empty());  // once, in the first piece
          id = piece["id"];
          name = piece["function"]["name"];
          EXPECT_EQ(piece["type"], "function");
        } else {
          EXPECT_FALSE(id.empty()) << "arguments before the name";
        }
        arguments += piece["function"]["arguments"].get<std::string>();
        ++pieces;
      }
    }
  }
  EXPECT_EQ(name, "get_weather");
  EXPECT_EQ(Json::parse(arguments), Json({{"city", "Paris"}}));
  EXPECT_GT(pieces, 2) << "the arguments were not streamed";
  EXPECT_EQ(finish, "tool_calls");
  EXPECT_GT(usage["completion_tokens"].get<int>(), 5) << r.body;
}

TEST_F(OpenAiExtensionsTest, ToolChoiceNoneLeavesTheOutputAsContent) {
  const std::string text = R"({"name": "get_weather", "arguments": {}})";
  serving_.generator.setDefaultScript({.tokens = tokens(text), .finish = FinishReason::kStop});
  RawResponse r = post("/v1/chat/completions",
                       std::string(R"({"model":"stories260K","tool_choice":"none",)"
                                   R"("messages":[{"role":"user","content":"hi"}],"tools":)") +
                           kTools + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  Json choice = Json::parse(r.body)["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop");
  EXPECT_FALSE(choice["message"].contains("tool_calls"));
  EXPECT_NE(choice["message"]["content"].get<std::string>().find("get_weather"), std::string::npos);
}

TEST_F(OpenAiExtensionsTest, BadToolsAreA400NamingTheField) {
  RawResponse r = post("/v1/chat/completions",
                       R"({"model":"stories260K","messages":[{"role":"user","content":"hi"}],)"
                       R"("tool_choice":"required"})");
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(Json::parse(r.body)["error"]["param"], "tool_choice");
}

TEST_F(OpenAiExtensionsTest, LogitBiasReachesTheGenerator) {
  serving_.generator.setDefaultScript({.tokens = {5}});
  RawResponse r = post("/v1/completions",
                       R"({"model":"stories260K","prompt":"Once","max_tokens":1,"logit_bias":{"42":100,"7":-100}})");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto submits = serving_.generator.submits();
  ASSERT_EQ(submits.size(), 1u);
  EXPECT_EQ(submits[0].params.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{42, 100.0f}, {7, -100.0f}}));
}

TEST_F(OpenAiExtensionsTest, StreamedChatEndsWithAUsageChunkWhenAsked) {
  serving_.generator.setDefaultScript({.tokens = tokens(" and a dog"), .finish = FinishReason::kStop});
  RawResponse r = post("/v1/chat/completions",
                       R"({"model":"stories260K","stream":true,"stream_options":{"include_usage":true},)"
                       R"("messages":[{"role":"user","content":"hi"}]})");
  ASSERT_EQ(r.status, 200) << r.body;
  std::vector<Json> chunks = dataLines(r.body);
  ASSERT_GE(chunks.size(), 2u);
  const Json& last = chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], tokens(" and a dog").size());
  for (size_t i = 0; i + 1 < chunks.size(); ++i) EXPECT_TRUE(chunks[i]["usage"].is_null());
}

TEST_F(OpenAiExtensionsTest, AnswersAResponse) {
  serving_.generator.setDefaultScript({.tokens = tokens("there was a cat"), .finish = FinishReason::kStop});
  RawResponse r = post("/v1/responses",
                       R"({"model":"stories260K","input":"Once upon a time","instructions":"x",)"
                       R"("max_output_tokens":30,"store":false})");
  ASSERT_EQ(r.status, 200) << r.body;
  Json body = Json::parse(r.body);
  EXPECT_EQ(body["object"], "response");
  EXPECT_TRUE(body["id"].get<std::string>().starts_with("resp_"));
  EXPECT_EQ(body["status"], "completed");
  EXPECT_EQ(body["output"][0]["content"][0]["text"], " there was a cat");
  EXPECT_EQ(body["usage"]["output_tokens"], tokens("there was a cat").size());
  // the plain template joins the instructions and the input with a newline.
  EXPECT_EQ(body["usage"]["input_tokens"],
            serving_.model->tokenizer().encode("x\nOnce upon a time", true).size());
  EXPECT_EQ(serving_.generator.submits()[0].params.max_tokens, 30);
  EXPECT_EQ(serving_.metric(R"(tandem:requests_total{endpoint="responses",status="200"})"), 1)
      << serving_.metrics.render();
}

TEST_F(OpenAiExtensionsTest, StreamsAResponseAsTypedEvents) {
  serving_.generator.setDefaultScript({.tokens = tokens("there was a cat"), .finish = FinishReason::kLength});
  RawResponse r = post("/v1/responses", R"({"model":"stories260K","input":"Once","stream":true})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("Content-Type"), "text/event-stream");
  std::vector<Json> events = dataLines(r.body);
  ASSERT_GE(events.size(), 6u);
  EXPECT_EQ(events.front()["type"], "response.created");
  EXPECT_EQ(events.back()["type"], "response.incomplete");
  std::string text;
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i]["sequence_number"], i);
    if (events[i]["type"] == "response.output_text.delta") text += events[i]["delta"];
  }
  EXPECT_EQ(text, " there was a cat");
  EXPECT_EQ(events.back()["response"]["incomplete_details"]["reason"], "max_output_tokens");
}

TEST_F(OpenAiExtensionsTest, RefusesAStoredResponseAndAnUnknownModel) {
  RawResponse stored = post("/v1/responses",
                            R"({"model":"stories260K","input":"hi","previous_response_id":"resp_x"})");
  ASSERT_EQ(stored.status, 400) << stored.body;
  EXPECT_EQ(Json::parse(stored.body)["error"]["param"], "previous_response_id");
  RawResponse unknown = post("/v1/responses", R"({"model":"gpt-5","input":"hi"})");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_TRUE(serving_.generator.submits().empty());
}

TEST_F(OpenAiExtensionsTest, TokenizesAndDetokenizesInVllmsShapes) {
  RawResponse t = post("/tokenize", R"({"model":"stories260K","prompt":"Once upon a time"})");
  ASSERT_EQ(t.status, 200) << t.body;
  Json tokenized = Json::parse(t.body);
  const std::vector<int32_t> want = serving_.model->tokenizer().encode("Once upon a time", true);
  EXPECT_EQ(tokenized["tokens"].get<std::vector<int32_t>>(), want);
  EXPECT_EQ(tokenized["count"], want.size());
  EXPECT_EQ(tokenized["max_model_len"], 256);
  EXPECT_TRUE(tokenized["token_strs"].is_null());

  // a chat's tokens are exactly the prompt a chat request gets.
  RawResponse c = post("/tokenize", R"({"messages":[{"role":"user","content":"Once upon a time"}]})");
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(Json::parse(c.body)["tokens"].get<std::vector<int32_t>>(), want);

  RawResponse d = post("/detokenize", R"({"model":"stories260K","tokens":)" +
                                          Json(tokens("Once upon a time")).dump() + "}");
  ASSERT_EQ(d.status, 200) << d.body;
  EXPECT_EQ(Json::parse(d.body)["prompt"], "Once upon a time");

  RawResponse outside = post("/detokenize", R"({"tokens":[1, 100000]})");
  EXPECT_EQ(outside.status, 400) << outside.body;
  EXPECT_EQ(Json::parse(outside.body)["error"]["param"], "tokens");
  EXPECT_EQ(post("/tokenize", R"({"model":"other","prompt":"x"})").status, 404);
  EXPECT_EQ(get("/tokenize").status, 405);
}

TEST_F(OpenAiExtensionsTest, AnswersOneModelByIdAnd404ForOthers) {
  RawResponse r = get("/v1/models/stories260K");
  ASSERT_EQ(r.status, 200) << r.body;
  Json model = Json::parse(r.body);
  EXPECT_EQ(model["id"], "stories260K");
  EXPECT_EQ(model["object"], "model");
  RawResponse missing = get("/v1/models/gpt-4");
  EXPECT_EQ(missing.status, 404);
  Json error = Json::parse(missing.body)["error"];
  EXPECT_EQ(error["type"], "not_found_error");
  EXPECT_EQ(error["message"], "model 'gpt-4' does not exist");
}

}  // namespace
}  // namespace tandem::router
