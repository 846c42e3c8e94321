// /tokenize and /detokenize bodies in vLLM's shapes: each form accepted,
// each bad one a 400 naming its field, and the responses' fields.
#include "router/openai/tokenize_request.h"

#include <gtest/gtest.h>

namespace tandem::openai {
namespace {

TEST(TokenizeRequestTest, ReadsAPromptOrMessages) {
  auto prompt = parseTokenizeRequest(R"({"model":"m","prompt":"hi","add_special_tokens":false})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(prompt));
  const TokenizeRequest& p = std::get<TokenizeRequest>(prompt);
  EXPECT_FALSE(p.chat);
  EXPECT_EQ(p.prompt, "hi");
  EXPECT_FALSE(p.add_special_tokens);
  EXPECT_EQ(p.model, "m");

  auto chat = parseTokenizeRequest(
      R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false,"return_token_strs":true})");
  ASSERT_TRUE(std::holds_alternative<TokenizeRequest>(chat));
  const TokenizeRequest& c = std::get<TokenizeRequest>(chat);
  EXPECT_TRUE(c.chat);
  EXPECT_TRUE(c.return_token_strs);
  EXPECT_FALSE(c.chat_request.add_generation_prompt);
  EXPECT_EQ(c.chat_request.messages.dump(), R"([{"role":"user","content":"hi"}])");
  EXPECT_EQ(c.model, "");
}

TEST(TokenizeRequestTest, RefusesBadBodiesNamingTheField) {
  for (const auto& [body, param] : std::vector<std::pair<std::string, std::string>>{
           {R"({})", "prompt"},
           {R"({"prompt":"a","messages":[]})", "messages"},
           {R"({"prompt":3})", "prompt"},
           {R"({"messages":[]})", "messages"},
           {R"({"prompt":"a","model":1})", "model"},
       }) {
    auto result = parseTokenizeRequest(body);
    ASSERT_TRUE(std::holds_alternative<ApiError>(result)) << body;
    EXPECT_EQ(std::get<ApiError>(result).status, 400);
    EXPECT_EQ(std::get<ApiError>(result).param, param) << body;
  }
}

TEST(DetokenizeRequestTest, ReadsTokenIdsAndRefusesAnythingElse) {
  auto ok = parseDetokenizeRequest(R"({"model":"m","tokens":[1,2,3]})");
  ASSERT_TRUE(std::holds_alternative<DetokenizeRequest>(ok));
  EXPECT_EQ(std::get<DetokenizeRequest>(ok).tokens, (std::vector<int32_t>{1, 2, 3}));
  for (const char* body : {R"({})", R"({"tokens":[1,-1]})", R"({"tokens":["a"]})", R"({"tokens":5})"}) {
    auto result = parseDetokenizeRequest(body);
    ASSERT_TRUE(std::holds_alternative<ApiError>(result)) << body;
    EXPECT_EQ(std::get<ApiError>(result).param, "tokens") << body;
  }
}

TEST(TokenizeResponseTest, HasVllmsFields) {
  EXPECT_EQ(renderTokenizeResponse({1, 2}, 256, nullptr),
            R"({"count":2,"max_model_len":256,"tokens":[1,2],"token_strs":null})");
  std::vector<std::string> strs = {"a", "b"};
  EXPECT_EQ(renderTokenizeResponse({1, 2}, 8, &strs),
            R"({"count":2,"max_model_len":8,"tokens":[1,2],"token_strs":["a","b"]})");
  EXPECT_EQ(renderDetokenizeResponse("hi"), R"({"prompt":"hi"})");
}

}  // namespace
}  // namespace tandem::openai
