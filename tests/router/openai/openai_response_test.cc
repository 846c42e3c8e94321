// renderResponse / renderChunk / renderUsageChunk / renderModelList: the
// exact OpenAI shapes, logprob formats, and valid UTF-8 from partial tokens.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "router/openai/openai_response.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

// U+FFFD, what a byte that is not UTF-8 becomes in the JSON text.
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

ResponseMeta completionsMeta() {
  return {.id = "cmpl-1", .created = 1700000000, .model = "stories", .endpoint = Endpoint::kCompletions};
}

ResponseMeta chatMeta() {
  return {.id = "chatcmpl-1", .created = 1700000000, .model = "stories",
          .endpoint = Endpoint::kChatCompletions};
}

GenerationRequest requestFor(Endpoint endpoint, bool want_logprobs = false,
                             bool include_usage = false) {
  GenerationRequest request;
  request.endpoint = endpoint;
  request.want_logprobs = want_logprobs;
  request.include_usage = include_usage;
  return request;
}

// two tokens, " Once" and " upon", the second with two alternatives.
std::vector<TokenLogprobEntry> twoTokens() {
  return {{.token = " Once", .logprob = -0.25f, .top = {{" Once", -0.25f}}},
          {.token = " upon", .logprob = -1.5f, .top = {{" upon", -1.5f}, {" a", -2.0f}}}};
}

TEST(RenderResponseTest, RendersAWholeCompletionExactly) {
  std::vector<ChoiceResult> choices = {
      {.index = 0, .text = "Hello", .finish_reason = "length"},
      {.index = 1, .text = "Bye", .finish_reason = "stop", .stop_reason = "\n"}};
  std::string body = renderResponse(completionsMeta(), requestFor(Endpoint::kCompletions), choices,
                                    {.prompt_tokens = 3, .completion_tokens = 2, .cached_tokens = 1});
  EXPECT_EQ(body,
            R"({"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"stories",)"
            R"("choices":[{"index":0,"text":"Hello","logprobs":null,"finish_reason":"length",)"
            R"("stop_reason":null},{"index":1,"text":"Bye","logprobs":null,)"
            R"("finish_reason":"stop","stop_reason":"\n"}],"usage":{"prompt_tokens":3,)"
            R"("completion_tokens":2,"total_tokens":5,"prompt_tokens_details":{"cached_tokens":1}}})");
}

TEST(RenderResponseTest, RendersAWholeChatCompletionExactly) {
  std::vector<ChoiceResult> choices = {{.index = 0, .text = "Hi there", .finish_reason = "stop"}};
  std::string body = renderResponse(chatMeta(), requestFor(Endpoint::kChatCompletions), choices,
                                    {.prompt_tokens = 10, .completion_tokens = 3});
  EXPECT_EQ(body,
            R"({"id":"chatcmpl-1","object":"chat.completion","created":1700000000,)"
            R"("model":"stories","choices":[{"index":0,"message":{"role":"assistant",)"
            R"("content":"Hi there"},"logprobs":null,"finish_reason":"stop","stop_reason":null}],)"
            R"("usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,)"
            R"("prompt_tokens_details":{"cached_tokens":0}}})");
}

TEST(RenderResponseTest, RendersCompletionLogprobsAsParallelArraysWithByteOffsets) {
  // an echoed prompt "Tell:" comes before the generated tokens
  std::vector<ChoiceResult> choices = {{.index = 0, .text = "Tell: Once upon", .logprobs = twoTokens(),
                                        .finish_reason = "length", .logprobs_text_offset = 5}};
  Json body = Json::parse(renderResponse(completionsMeta(), requestFor(Endpoint::kCompletions, true),
                                         choices, {}));
  const Json& logprobs = body["choices"][0]["logprobs"];
  EXPECT_EQ(logprobs.dump(),
            R"({"tokens":[" Once"," upon"],"token_logprobs":[-0.25,-1.5],)"
            R"("top_logprobs":[{" Once":-0.25},{" upon":-1.5," a":-2.0}],"text_offset":[5,10]})");
}

TEST(RenderResponseTest, RendersChatLogprobsWithBytesAndTopAlternatives) {
  std::vector<ChoiceResult> choices = {{.index = 0, .text = " Once upon", .logprobs = twoTokens(),
                                        .finish_reason = "length"}};
  Json body = Json::parse(renderResponse(chatMeta(), requestFor(Endpoint::kChatCompletions, true),
                                         choices, {}));
  const Json& content = body["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[1].dump(),
            R"({"token":" upon","logprob":-1.5,"bytes":[32,117,112,111,110],"top_logprobs":[)"
            R"({"token":" upon","logprob":-1.5,"bytes":[32,117,112,111,110]},)"
            R"({"token":" a","logprob":-2.0,"bytes":[32,97]}]})");
}

TEST(RenderResponseTest, WritesLogprobsShortAndMinusInfinityAsMinus9999) {
  std::vector<TokenLogprobEntry> entries = {
      {.token = "a", .logprob = -0.1f,
       .top = {{"a", -0.1f}, {"b", -std::numeric_limits<float>::infinity()}}}};
  std::vector<ChoiceResult> choices = {{.index = 0, .text = "a", .logprobs = entries}};
  std::string body = renderResponse(completionsMeta(), requestFor(Endpoint::kCompletions, true),
                                    choices, {});
  EXPECT_NE(body.find(R"("token_logprobs":[-0.1])"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("top_logprobs":[{"a":-0.1,"b":-9999.0}])"), std::string::npos) << body;
}

TEST(RenderResponseTest, RendersEmptyLogprobsWhenWantedButNoTokensCame) {
  std::vector<ChoiceResult> choices = {{.index = 0, .text = "", .finish_reason = "stop"}};
  Json completion = Json::parse(renderResponse(
      completionsMeta(), requestFor(Endpoint::kCompletions, true), choices, {}));
  EXPECT_EQ(completion["choices"][0]["logprobs"]["tokens"], Json::array());
  Json chat = Json::parse(
      renderResponse(chatMeta(), requestFor(Endpoint::kChatCompletions, true), choices, {}));
  EXPECT_EQ(chat["choices"][0]["logprobs"].dump(), R"({"content":[]})");
}

TEST(RenderResponseTest, ReplacesPartialUtf8InTextButKeepsRawBytes) {
  // a token that is the first two bytes of "€" (E2 82 AC), and a lone 0xFF
  std::string partial = "\xE2\x82";
  std::vector<TokenLogprobEntry> entries = {
      {.token = partial, .logprob = -1.0f, .top = {{partial, -1.0f}, {"\xFF", -2.0f}}}};
  std::vector<ChoiceResult> choices = {{.index = 0, .text = "ok\xFF" + partial, .logprobs = entries}};

  std::string chat_body =
      renderResponse(chatMeta(), requestFor(Endpoint::kChatCompletions, true), choices, {});
  Json chat = Json::parse(chat_body);  // throws on invalid UTF-8
  std::string content = chat["choices"][0]["message"]["content"];
  EXPECT_EQ(content.rfind(std::string("ok") + std::string(kReplacement), 0), 0u) << content;
  EXPECT_EQ(content.find('\xE2' + std::string("\x82")), std::string::npos);
  const Json& record = chat["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(record["bytes"], Json::array({0xE2, 0x82}));
  EXPECT_EQ(record["top_logprobs"][1]["token"], std::string(kReplacement));
  EXPECT_EQ(record["top_logprobs"][1]["bytes"], Json::array({0xFF}));

  // completions logprobs use token texts as object keys: those are replaced too
  std::string completion_body = renderResponse(
      completionsMeta(), requestFor(Endpoint::kCompletions, true), choices, {});
  Json completion = Json::parse(completion_body);
  EXPECT_TRUE(completion["choices"][0]["logprobs"]["top_logprobs"][0].contains(std::string(kReplacement)));
}

TEST(RenderChunkTest, RendersCompletionChunksWithoutUsageUnlessAskedFor) {
  ChoiceDelta delta{.index = 2, .text = " upon"};
  EXPECT_EQ(renderChunk(completionsMeta(), requestFor(Endpoint::kCompletions), delta),
            R"({"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"stories",)"
            R"("choices":[{"index":2,"text":" upon","logprobs":null,"finish_reason":null,)"
            R"("stop_reason":null}]})");

  Json with_usage = Json::parse(
      renderChunk(completionsMeta(), requestFor(Endpoint::kCompletions, false, true), delta));
  ASSERT_TRUE(with_usage.contains("usage"));
  EXPECT_TRUE(with_usage["usage"].is_null());
}

TEST(RenderChunkTest, ClosesACompletionChoiceWithItsFinishAndStopReason) {
  ChoiceDelta delta{.index = 0, .text = "", .finish_reason = "stop", .stop_reason = "The End"};
  Json chunk = Json::parse(renderChunk(completionsMeta(), requestFor(Endpoint::kCompletions), delta));
  EXPECT_EQ(chunk["choices"][0]["text"], "");
  EXPECT_EQ(chunk["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(chunk["choices"][0]["stop_reason"], "The End");
}

TEST(RenderChunkTest, OpensAChatChoiceWithTheAssistantRole) {
  ChoiceDelta delta{.index = 0, .text = "", .first = true};
  EXPECT_EQ(renderChunk(chatMeta(), requestFor(Endpoint::kChatCompletions), delta),
            R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,)"
            R"("model":"stories","choices":[{"index":0,"delta":{"role":"assistant","content":""},)"
            R"("logprobs":null,"finish_reason":null,"stop_reason":null}]})");
}

TEST(RenderChunkTest, SendsOnlyContentAfterTheFirstChatChunkAndAnEmptyDeltaToClose) {
  GenerationRequest request = requestFor(Endpoint::kChatCompletions);
  Json middle = Json::parse(renderChunk(chatMeta(), request, {.index = 1, .text = "Hi"}));
  EXPECT_EQ(middle["choices"][0]["delta"].dump(), R"({"content":"Hi"})");
  EXPECT_EQ(middle["choices"][0]["index"], 1);

  Json close = Json::parse(
      renderChunk(chatMeta(), request, {.index = 1, .text = "", .finish_reason = "length"}));
  EXPECT_EQ(close["choices"][0]["delta"].dump(), "{}");
  EXPECT_EQ(close["choices"][0]["finish_reason"], "length");

  Json close_with_text = Json::parse(
      renderChunk(chatMeta(), request, {.index = 1, .text = "!", .finish_reason = "stop"}));
  EXPECT_EQ(close_with_text["choices"][0]["delta"].dump(), R"({"content":"!"})");

  Json only_chunk = Json::parse(renderChunk(
      chatMeta(), request, {.index = 0, .text = "x", .finish_reason = "stop", .first = true}));
  EXPECT_EQ(only_chunk["choices"][0]["delta"].dump(), R"({"role":"assistant","content":"x"})");
}

TEST(RenderChunkTest, CarriesLogprobsOnlyForChunksWithTokens) {
  GenerationRequest chat_request = requestFor(Endpoint::kChatCompletions, true);
  Json opening = Json::parse(renderChunk(chatMeta(), chat_request, {.index = 0, .first = true}));
  EXPECT_TRUE(opening["choices"][0]["logprobs"].is_null());
  Json tokens = Json::parse(renderChunk(chatMeta(), chat_request,
                                        {.index = 0, .text = " Once upon", .logprobs = twoTokens()}));
  EXPECT_EQ(tokens["choices"][0]["logprobs"]["content"][0]["token"], " Once");

  // completions: offsets continue from the bytes sent before
  Json completion = Json::parse(renderChunk(
      completionsMeta(), requestFor(Endpoint::kCompletions, true),
      {.index = 0, .text = " Once upon", .logprobs = twoTokens(), .logprobs_text_offset = 12}));
  EXPECT_EQ(completion["choices"][0]["logprobs"]["text_offset"], Json::array({12, 17}));

  // not asked for: null even when the pipeline has entries
  Json unasked = Json::parse(renderChunk(completionsMeta(), requestFor(Endpoint::kCompletions),
                                         {.index = 0, .text = "x", .logprobs = twoTokens()}));
  EXPECT_TRUE(unasked["choices"][0]["logprobs"].is_null());
}

TEST(RenderUsageChunkTest, SendsUsageWithNoChoices) {
  EXPECT_EQ(renderUsageChunk(chatMeta(), {.prompt_tokens = 4, .completion_tokens = 6, .cached_tokens = 2}),
            R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,)"
            R"("model":"stories","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":6,)"
            R"("total_tokens":10,"prompt_tokens_details":{"cached_tokens":2}}})");
  Json completion = Json::parse(renderUsageChunk(completionsMeta(), {.prompt_tokens = 1}));
  EXPECT_EQ(completion["object"], "text_completion");
  EXPECT_EQ(completion["usage"]["total_tokens"], 1);
}

TEST(RenderModelListTest, ListsEachModelOwnedByTandem) {
  EXPECT_EQ(renderModelList({{.id = "stories", .created = 1, .max_model_len = 512},
                             {.id = "b", .created = 2, .max_model_len = 8}}),
            R"({"object":"list","data":[{"id":"stories","object":"model","created":1,)"
            R"("owned_by":"tandem","root":"stories","max_model_len":512},{"id":"b","object":"model",)"
            R"("created":2,"owned_by":"tandem","root":"b","max_model_len":8}]})");
  EXPECT_EQ(renderModelList({}), R"({"object":"list","data":[]})");
}

}  // namespace
}  // namespace tandem::openai
