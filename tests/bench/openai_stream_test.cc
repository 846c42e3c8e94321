// Request bodies and stream chunks in the OpenAI format.
#include "bench/loadgen/openai_stream.h"

#include <gtest/gtest.h>

#include "nlohmann/json.hpp"

namespace tandem::bench {
namespace {

using nlohmann::json;

TEST(OpenAiStreamTest, CompletionsBodySendsTokenIdsAndLengthControls) {
  StreamRequest r;
  r.model = "m";
  r.prompt_ids = {5, 6, 7};
  r.max_tokens = 12;
  json j = json::parse(openAiBody(r));
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["prompt"], json({5, 6, 7}));
  EXPECT_EQ(j["max_tokens"], 12);
  EXPECT_EQ(j["ignore_eos"], true);
  EXPECT_EQ(j["stream"], true);
  EXPECT_EQ(j["stream_options"]["include_usage"], true);
  EXPECT_FALSE(j.contains("temperature"));
  EXPECT_STREQ(openAiPath(Api::kCompletions), "/v1/completions");
}

TEST(OpenAiStreamTest, ChatBodySendsMessages) {
  StreamRequest r;
  r.api = Api::kChat;
  r.model = "m";
  r.messages = {{"user", "hi"}, {"assistant", "hello"}, {"user", "more"}};
  r.temperature = 0.0;
  json j = json::parse(openAiBody(r));
  ASSERT_EQ(j["messages"].size(), 3u);
  EXPECT_EQ(j["messages"][1]["role"], "assistant");
  EXPECT_EQ(j["messages"][2]["content"], "more");
  EXPECT_EQ(j["temperature"], 0.0);
  EXPECT_FALSE(j.contains("prompt"));
  EXPECT_STREQ(openAiPath(Api::kChat), "/v1/chat/completions");
}

TEST(OpenAiStreamTest, ReaderStampsTextEventsAndReadsUsage) {
  OpenAiStreamReader reader(Api::kCompletions);
  StreamResult res;
  Clock::time_point t1 = Clock::now(), t2 = t1 + std::chrono::milliseconds(5);
  reader.onData(R"({"choices":[{"index":0,"text":"Once","finish_reason":null}]})", t1, &res);
  reader.onData(R"({"choices":[{"index":0,"text":"","finish_reason":null}]})", t2, &res);  // no output
  reader.onData(R"({"choices":[{"index":0,"text":" upon","finish_reason":"length"}]})", t2, &res);
  reader.onData(R"({"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}})",
                t2, &res);
  EXPECT_FALSE(reader.done());
  reader.onData("[DONE]", t2, &res);
  EXPECT_TRUE(reader.done());
  EXPECT_EQ(res.token_times, (std::vector<Clock::time_point>{t1, t2}));
  EXPECT_EQ(res.text, "Once upon");
  EXPECT_EQ(res.finish_reason, "length");
  EXPECT_EQ(res.prompt_tokens, 9);
  EXPECT_EQ(res.completion_tokens, 2);
  EXPECT_EQ(res.cached_tokens, 4);
  EXPECT_TRUE(res.error_kind.empty());
}

TEST(OpenAiStreamTest, ReaderReadsChatDeltasAndLlamaServerCacheTimings) {
  OpenAiStreamReader reader(Api::kChat);
  StreamResult res;
  Clock::time_point t = Clock::now();
  reader.onData(R"({"choices":[{"delta":{"role":"assistant"}}]})", t, &res);
  reader.onData(R"({"choices":[{"delta":{"content":"Hi"}}]})", t, &res);
  reader.onData(R"({"choices":[{"delta":{},"finish_reason":"stop"}],"timings":{"cache_n":12,"prompt_n":3}})", t, &res);
  EXPECT_EQ(res.token_times.size(), 1u);
  EXPECT_EQ(res.text, "Hi");
  EXPECT_EQ(res.cached_tokens, 12);
}

TEST(OpenAiStreamTest, ReaderMarksErrorEventsAndGarbage) {
  OpenAiStreamReader reader(Api::kCompletions);
  StreamResult res;
  reader.onData(R"({"error":{"message":"out of memory","type":"server_error"}})", Clock::now(), &res);
  EXPECT_EQ(res.error_kind, "stream_error");
  EXPECT_EQ(res.error_message, "out of memory");
  StreamResult res2;
  reader.onData("not json", Clock::now(), &res2);
  EXPECT_EQ(res2.error_kind, "protocol");
}

}  // namespace
}  // namespace tandem::bench
