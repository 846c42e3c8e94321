// parseGenerationRequest: every accepted form of each field, and each
// rejection with its status, param and message.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "router/openai/openai_request.h"

namespace tandem::openai {
namespace {

using Json = nlohmann::ordered_json;

GenerationRequest parseOk(std::string_view body, Endpoint endpoint = Endpoint::kCompletions) {
  ParseResult result = parseGenerationRequest(body, endpoint);
  if (auto* error = std::get_if<openai::ApiError>(&result)) {
    ADD_FAILURE() << "rejected " << body << ": " << error->message << " (param " << error->param
                  << ")";
    return {};
  }
  return std::get<GenerationRequest>(std::move(result));
}

GenerationRequest parseChatOk(std::string_view body) {
  return parseOk(body, Endpoint::kChatCompletions);
}

// a completions body with the given fields after model and prompt.
std::string completions(std::string_view fields) {
  std::string body = R"({"model":"m","prompt":"hi")";
  if (!fields.empty()) body += "," + std::string(fields);
  return body + "}";
}

// a chat body with the given fields after model and messages.
std::string chat(std::string_view fields) {
  std::string body = R"({"model":"m","messages":[{"role":"user","content":"hi"}])";
  if (!fields.empty()) body += "," + std::string(fields);
  return body + "}";
}

TEST(ParseCompletionsTest, FillsOpenAIDefaultsForAMinimalBody) {
  GenerationRequest request = parseOk(R"({"model":"stories","prompt":"Once upon"})");
  EXPECT_EQ(request.endpoint, Endpoint::kCompletions);
  EXPECT_EQ(request.model, "stories");
  ASSERT_EQ(request.prompts.size(), 1u);
  EXPECT_EQ(request.prompts[0].text, "Once upon");
  EXPECT_FALSE(request.prompts[0].is_tokens);
  EXPECT_FLOAT_EQ(request.sampling.temperature, 1.0f);
  EXPECT_FLOAT_EQ(request.sampling.top_p, 1.0f);
  EXPECT_EQ(request.sampling.top_k, -1);
  EXPECT_FALSE(request.sampling.seed.has_value());
  EXPECT_FALSE(request.sampling.logprobs.has_value());
  EXPECT_FALSE(request.max_tokens_set);
  EXPECT_EQ(request.n, 1);
  EXPECT_TRUE(request.stop.empty());
  EXPECT_FALSE(request.want_logprobs);
  EXPECT_FALSE(request.echo);
  EXPECT_FALSE(request.stream);
  EXPECT_FALSE(request.include_usage);
  EXPECT_TRUE(request.skip_special_tokens);
  EXPECT_FALSE(request.include_stop_str_in_output);
}

TEST(ParseCompletionsTest, AcceptsEveryPromptForm) {
  EXPECT_EQ(parseOk(R"({"model":"m","prompt":""})").prompts.at(0).text, "");

  GenerationRequest strings = parseOk(R"({"model":"m","prompt":["a","b"]})");
  ASSERT_EQ(strings.prompts.size(), 2u);
  EXPECT_EQ(strings.prompts[1].text, "b");

  GenerationRequest ids = parseOk(R"({"model":"m","prompt":[1,2,3.0]})");
  ASSERT_EQ(ids.prompts.size(), 1u);
  EXPECT_TRUE(ids.prompts[0].is_tokens);
  EXPECT_EQ(ids.prompts[0].token_ids, (std::vector<int32_t>{1, 2, 3}));

  GenerationRequest batches = parseOk(R"({"model":"m","prompt":[[5],[0,2147483647]]})");
  ASSERT_EQ(batches.prompts.size(), 2u);
  EXPECT_EQ(batches.prompts[0].token_ids, (std::vector<int32_t>{5}));
  EXPECT_EQ(batches.prompts[1].token_ids, (std::vector<int32_t>{0, 2147483647}));
  EXPECT_TRUE(batches.prompts[1].is_tokens);
}

TEST(ParseLogitBiasTest, RefusesMoreEntriesThanTheLimitBeforeReadingThem) {
  std::string bias;
  for (int i = 0; i <= generation::SamplingParams::kMaxLogitBias; ++i) {
    bias += (i ? "," : "") + std::string("\"") + std::to_string(i) + "\":1";
  }
  ParseResult result = parseGenerationRequest(completions(R"("logit_bias":{)" + bias + "}"),
                                              Endpoint::kCompletions);
  ASSERT_TRUE(std::holds_alternative<openai::ApiError>(result));
  EXPECT_EQ(std::get<openai::ApiError>(result).param, "logit_bias");
  EXPECT_EQ(std::get<openai::ApiError>(result).message,
            "logit_bias may hold at most 1024 entries, got 1025");
}

TEST(ParseLogitBiasTest, ReadsTokenIdKeysWithTheirBiasOnBothEndpoints) {
  GenerationRequest cmpl = parseOk(completions(R"("logit_bias":{"50256":-100,"7":2.5,"0":100})"));
  EXPECT_EQ(cmpl.sampling.logit_bias,
            (std::vector<std::pair<int32_t, float>>{{50256, -100.0f}, {7, 2.5f}, {0, 100.0f}}));
  GenerationRequest chat_request = parseChatOk(chat(R"("logit_bias":{"3":1})"));
  EXPECT_EQ(chat_request.sampling.logit_bias, (std::vector<std::pair<int32_t, float>>{{3, 1.0f}}));
}

TEST(ParseCompletionsTest, ReadsEveryFieldItKnows) {
  GenerationRequest request = parseOk(completions(
      R"("max_tokens":7,"temperature":0,"top_p":0.5,"top_k":40,"min_p":0.1,)"
      R"("repetition_penalty":1.2,"presence_penalty":-2,"frequency_penalty":2,"seed":42,)"
      R"("n":3,"best_of":3,"stop":["\n","","END"],"stop_token_ids":[2,7],"ignore_eos":true,)"
      R"("logprobs":5,"echo":true,"stream":true,"stream_options":{"include_usage":true},)"
      R"("user":"u1","skip_special_tokens":false,"include_stop_str_in_output":true,)"
      R"("suffix":"","logit_bias":{},"response_format":{"type":"text"})"));
  const generation::SamplingParams& s = request.sampling;
  EXPECT_EQ(s.max_tokens, 7);
  EXPECT_TRUE(request.max_tokens_set);
  EXPECT_FLOAT_EQ(s.temperature, 0.0f);
  EXPECT_FLOAT_EQ(s.top_p, 0.5f);
  EXPECT_EQ(s.top_k, 40);
  EXPECT_FLOAT_EQ(s.min_p, 0.1f);
  EXPECT_FLOAT_EQ(s.repetition_penalty, 1.2f);
  EXPECT_FLOAT_EQ(s.presence_penalty, -2.0f);
  EXPECT_FLOAT_EQ(s.frequency_penalty, 2.0f);
  EXPECT_EQ(s.seed, 42u);
  EXPECT_EQ(request.n, 3);
  EXPECT_EQ(request.stop, (std::vector<std::string>{"\n", "END"}));
  EXPECT_EQ(s.stop_token_ids, (std::vector<int32_t>{2, 7}));
  EXPECT_TRUE(s.ignore_eos);
  EXPECT_TRUE(request.want_logprobs);
  EXPECT_EQ(request.top_logprobs, 5);
  EXPECT_EQ(s.logprobs, 5);
  EXPECT_TRUE(request.echo);
  EXPECT_TRUE(request.stream);
  EXPECT_TRUE(request.include_usage);
  EXPECT_EQ(request.user, "u1");
  EXPECT_FALSE(request.skip_special_tokens);
  EXPECT_TRUE(request.include_stop_str_in_output);
}

TEST(ParseCompletionsTest, TreatsNullAsAbsentAndIgnoresUnknownFields) {
  GenerationRequest request = parseOk(completions(
      R"("temperature":null,"max_tokens":null,"stop":null,"seed":null,"logprobs":null,)"
      R"("stream_options":null,"n":null,"user":null,"suffix":null,"best_of":null,)"
      R"("min_tokens":3,"guided_json":{"a":1},"x-custom":[1,{"b":null}])"));
  EXPECT_FLOAT_EQ(request.sampling.temperature, 1.0f);
  EXPECT_FALSE(request.max_tokens_set);
  EXPECT_TRUE(request.stop.empty());
  EXPECT_FALSE(request.sampling.seed.has_value());
  EXPECT_FALSE(request.want_logprobs);
  EXPECT_EQ(request.n, 1);
}

TEST(ParseCompletionsTest, AcceptsIntegersForFloatFieldsAndZeroLogprobs) {
  GenerationRequest request = parseOk(completions(R"("temperature":2,"top_p":1,"logprobs":0)"));
  EXPECT_FLOAT_EQ(request.sampling.temperature, 2.0f);
  EXPECT_FLOAT_EQ(request.sampling.top_p, 1.0f);
  EXPECT_TRUE(request.want_logprobs);
  EXPECT_EQ(request.sampling.logprobs, 0);
}

TEST(ParseCompletionsTest, KeepsTheBitsOfNegativeAndHugeSeeds) {
  EXPECT_EQ(parseOk(completions(R"("seed":-1)")).sampling.seed, UINT64_MAX);
  EXPECT_EQ(parseOk(completions(R"("seed":18446744073709551615)")).sampling.seed, UINT64_MAX);
  EXPECT_EQ(parseOk(completions(R"("seed":-9223372036854775808)")).sampling.seed,
            uint64_t{1} << 63);
  EXPECT_EQ(parseOk(completions(R"("seed":0)")).sampling.seed, 0u);
}

TEST(ParseCompletionsTest, ReadsOnlyTheCompletionsMeaningOfSharedNames) {
  // max_completion_tokens is a chat field; a completions body ignores it
  GenerationRequest request = parseOk(completions(R"("max_completion_tokens":0,"max_tokens":4)"));
  EXPECT_EQ(request.sampling.max_tokens, 4);
  // and the chat fields too
  EXPECT_TRUE(parseOk(completions(R"("top_logprobs":3,"tools":5)")).messages.is_null());
}

TEST(ParseChatTest, KeepsMessagesToolsAndKwargsAsSentInKeyOrder) {
  std::string messages =
      R"([{"role":"system","content":"be brief","z":1,"a":2},)"
      R"({"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"!"}]},)"
      R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function"}]},)"
      R"({"role":"tool","content":"42","tool_call_id":"c1"},{"role":"custom_role"}])";
  std::string tools =
      R"([{"type":"function","function":{"name":"f","parameters":{"type":"object","z":{},"a":{}}}}])";
  GenerationRequest request = parseChatOk(R"({"model":"m","messages":)" + messages +
                                          R"(,"tools":)" + tools +
                                          R"(,"chat_template_kwargs":{"enable_thinking":false}})");
  EXPECT_EQ(request.endpoint, Endpoint::kChatCompletions);
  EXPECT_EQ(request.messages.dump(), messages);
  EXPECT_EQ(request.tools.dump(), tools);
  EXPECT_EQ(request.chat_template_kwargs.dump(), R"({"enable_thinking":false})");
  EXPECT_TRUE(request.prompts.empty());
  EXPECT_TRUE(request.add_generation_prompt);
  EXPECT_FALSE(request.continue_final_message);
}

TEST(ParseChatTest, DefaultsLeaveToolsNullAndKwargsEmpty) {
  GenerationRequest request = parseChatOk(chat(R"("tools":null,"chat_template_kwargs":null)"));
  EXPECT_TRUE(request.tools.is_null());
  EXPECT_TRUE(request.chat_template_kwargs.is_object());
  EXPECT_TRUE(request.chat_template_kwargs.empty());
}

TEST(ParseChatTest, ContinuingTheFinalMessageTurnsOffTheUnsentGenerationPrompt) {
  GenerationRequest request = parseChatOk(chat(R"("continue_final_message":true)"));
  EXPECT_TRUE(request.continue_final_message);
  EXPECT_FALSE(request.add_generation_prompt);
  EXPECT_FALSE(parseChatOk(chat(R"("add_generation_prompt":false)")).add_generation_prompt);
}

TEST(ParseChatTest, AcceptsNestingJustInsideTheDepthLimit) {
  // the body is level 0 and "chat_template_kwargs" level 1: 127 levels in all
  std::string nested = std::string(126, '[') + std::string(126, ']');
  GenerationRequest request = parseChatOk(chat(R"("chat_template_kwargs":{"x":)" + nested + "}"));
  EXPECT_EQ(request.chat_template_kwargs["x"].dump(), nested);
  ParseResult deeper = parseGenerationRequest(
      chat(R"("chat_template_kwargs":{"x":[)" + nested + "]}"), Endpoint::kChatCompletions);
  EXPECT_TRUE(std::holds_alternative<openai::ApiError>(deeper));
}

TEST(ParseChatTest, MaxCompletionTokensWinsOverMaxTokens) {
  GenerationRequest request = parseChatOk(chat(R"("max_tokens":100,"max_completion_tokens":9)"));
  EXPECT_EQ(request.sampling.max_tokens, 9);
  EXPECT_TRUE(request.max_tokens_set);
  EXPECT_EQ(parseChatOk(chat(R"("max_tokens":100)")).sampling.max_tokens, 100);
}

TEST(ParseChatTest, ReadsLogprobsAsABoolWithTopLogprobs) {
  GenerationRequest plain = parseChatOk(chat(R"("logprobs":true)"));
  EXPECT_TRUE(plain.want_logprobs);
  EXPECT_EQ(plain.top_logprobs, 0);
  EXPECT_EQ(plain.sampling.logprobs, 0);

  GenerationRequest top = parseChatOk(chat(R"("logprobs":true,"top_logprobs":20)"));
  EXPECT_EQ(top.top_logprobs, 20);
  EXPECT_EQ(top.sampling.logprobs, 20);

  GenerationRequest off = parseChatOk(chat(R"("logprobs":false,"top_logprobs":null)"));
  EXPECT_FALSE(off.want_logprobs);
  EXPECT_FALSE(off.sampling.logprobs.has_value());
}

TEST(ParseCompletionsTest, EchoWithLogprobsOrPromptLogprobsScoresThePrompt) {
  GenerationRequest plain = parseOk(completions(R"("logprobs":2)"));
  EXPECT_FALSE(plain.sampling.prompt_logprobs.has_value());
  GenerationRequest echo = parseOk(completions(R"("echo":true,"logprobs":2)"));
  EXPECT_EQ(echo.sampling.prompt_logprobs, 2);
  EXPECT_FALSE(echo.score_only);
  // the larger top count of the two asks
  GenerationRequest both = parseOk(completions(R"("echo":true,"logprobs":1,"prompt_logprobs":3)"));
  EXPECT_EQ(both.sampling.prompt_logprobs, 3);
  EXPECT_EQ(both.prompt_logprobs, 3);
  GenerationRequest vllm = parseChatOk(chat(R"("prompt_logprobs":0)"));
  EXPECT_EQ(vllm.sampling.prompt_logprobs, 0);
  // lm-evaluation-harness: echo, logprobs 1, max_tokens 0
  GenerationRequest score = parseOk(completions(R"("echo":true,"logprobs":1,"max_tokens":0)"));
  EXPECT_TRUE(score.score_only);
  EXPECT_EQ(score.sampling.max_tokens, 1);
  EXPECT_TRUE(score.max_tokens_set);
  EXPECT_EQ(score.sampling.prompt_logprobs, 1);
}

struct Rejection {
  Endpoint endpoint;
  std::string body;
  std::string param;    // "" = no param
  std::string message;  // a part of the message
};

void PrintTo(const Rejection& r, std::ostream* os) { *os << r.body; }

class RejectionTest : public ::testing::TestWithParam<Rejection> {};

TEST_P(RejectionTest, AnswersA400NamingTheField) {
  const Rejection& want = GetParam();
  ParseResult result = parseGenerationRequest(want.body, want.endpoint);
  ASSERT_TRUE(std::holds_alternative<openai::ApiError>(result)) << "accepted " << want.body;
  const openai::ApiError& error = std::get<openai::ApiError>(result);
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.type, "invalid_request_error");
  EXPECT_EQ(error.param, want.param);
  EXPECT_NE(error.message.find(want.message), std::string::npos)
      << "message: " << error.message << "\nwanted a part: " << want.message;
}

constexpr Endpoint kCmpl = Endpoint::kCompletions;
constexpr Endpoint kChat = Endpoint::kChatCompletions;

INSTANTIATE_TEST_SUITE_P(
    Body, RejectionTest,
    ::testing::Values(
        Rejection{kCmpl, "", "", "invalid JSON: "},
        Rejection{kCmpl, R"({"model":"m",)", "", "invalid JSON: parse error"},
        Rejection{kCmpl, "{\"model\":\"m\",\"prompt\":\"\xff\"}", "", "invalid JSON: "},
        // found by fuzz/openai_request_fuzzer.cc: out_of_range escaped the parser.
        Rejection{kCmpl, R"({"model":"m","prompt":"hi","temperature":1e999})", "",
                  "invalid JSON: number overflow parsing '1e999'"},
        Rejection{kChat, R"({"model":37e777})", "", "invalid JSON: number overflow"},
        Rejection{kCmpl, std::string(200, '[') + std::string(200, ']'), "",
                  "the request body nests deeper than 128 levels"},
        Rejection{kCmpl, R"([{"model":"m"}])", "", "must be a JSON object, got array"},
        Rejection{kChat, R"("hello")", "", "must be a JSON object, got string"}));

INSTANTIATE_TEST_SUITE_P(
    ModelAndPrompt, RejectionTest,
    ::testing::Values(
        Rejection{kCmpl, R"({"prompt":"hi"})", "model", "you must provide a model parameter"},
        Rejection{kCmpl, R"({"model":null,"prompt":"hi"})", "model", "model parameter"},
        Rejection{kCmpl, R"({"model":5,"prompt":"hi"})", "model", "model must be a string"},
        Rejection{kChat, R"({"model":"m","messages":[{"role":"user","content":"a"}],"echo":true,)"
                         R"("max_tokens":0})", "max_tokens", "at least 1"},
        Rejection{kCmpl, R"({"model":"m","prompt":"a","prompt_logprobs":21})", "prompt_logprobs",
                  "[0, 20]"},
        Rejection{kCmpl, R"({"model":"m","prompt":"a","prompt_logprobs":1,"stream":true})",
                  "prompt_logprobs", "not available when stream is true"},
        Rejection{kCmpl, R"({"model":"m"})", "prompt", "prompt is required"},
        Rejection{kCmpl, R"({"model":"m","prompt":5})", "prompt", "prompt must be a string"},
        Rejection{kCmpl, R"({"model":"m","prompt":[]})", "prompt", "must not be an empty array"},
        Rejection{kCmpl, R"({"model":"m","prompt":[[]]})", "prompt", "empty list of token ids"},
        Rejection{kCmpl, R"({"model":"m","prompt":[[1],[]]})", "prompt", "empty list"},
        Rejection{kCmpl, R"({"model":"m","prompt":[1,-1]})", "prompt", "got -1"},
        Rejection{kCmpl, R"({"model":"m","prompt":[2147483648]})", "prompt", "[0, 2147483647]"},
        Rejection{kCmpl, R"({"model":"m","prompt":[1.5]})", "prompt", "got 1.5"},
        Rejection{kCmpl, R"({"model":"m","prompt":[1,"a"]})", "prompt", R"(got "a")"},
        Rejection{kCmpl, R"({"model":"m","prompt":["a",1]})", "prompt", "an array of strings"},
        Rejection{kCmpl, R"({"model":"m","prompt":[[1],2]})", "prompt", "arrays of token ids"},
        Rejection{kCmpl, R"({"model":"m","prompt":[true]})", "prompt", "prompt must be"},
        Rejection{kCmpl, R"({"model":"m","prompt":[{"a":1}]})", "prompt", "prompt must be"},
        Rejection{kCmpl, R"({"model":"m","prompt":[)" + [] {
          std::string items = R"("a")";
          for (int i = 1; i < GenerationRequest::kMaxPrompts + 1; ++i) items += R"(,"a")";
          return items;
        }() + "]}", "prompt", "at most 1024 prompts, got 1025"}));

INSTANTIATE_TEST_SUITE_P(
    Messages, RejectionTest,
    ::testing::Values(
        Rejection{kChat, R"({"model":"m"})", "messages", "messages is required"},
        Rejection{kChat, R"({"model":"m","messages":[]})", "messages", "non-empty array"},
        Rejection{kChat, R"({"model":"m","messages":"hi"})", "messages", "non-empty array"},
        Rejection{kChat, R"({"model":"m","messages":[1]})", "messages",
                  "messages[0] must be an object, got number"},
        Rejection{kChat, R"({"model":"m","messages":[{"role":"user"},{"content":"x"}]})",
                  "messages", "messages[1].role must be a string"},
        Rejection{kChat, R"({"model":"m","messages":[{"role":7,"content":"x"}]})", "messages",
                  "messages[0].role must be a string"},
        Rejection{kChat, R"({"model":"m","messages":[{"role":"user","content":5}]})",
                  "messages", "messages[0].content must be a string, an array"},
        Rejection{kChat,
                  R"({"model":"m","messages":[{"role":"user","content":[{"type":"image_url"}]}]})",
                  "messages", "messages[0].content[0]: content parts of type 'image_url'"},
        Rejection{kChat, R"({"model":"m","messages":[{"role":"user","content":[{"type":"text"}]}]})",
                  "messages", "messages[0].content[0].text must be a string"},
        Rejection{kChat, R"({"model":"m","messages":[{"role":"user","content":["hi"]}]})",
                  "messages", "must be an object with a string \"type\""},
        Rejection{kChat, R"({"model":"m","messages":[)" + [] {
          std::string items = R"({"role":"user"})";
          for (int i = 0; i < GenerationRequest::kMaxMessages; ++i) items += R"(,{"role":"user"})";
          return items;
        }() + "]}", "messages", "at most 4096 messages, got 4097"},
        Rejection{kChat, chat(R"("tools":"f")"), "tools", "tools must be an array, got string"},
        Rejection{kChat, chat(R"("tools":[1])"), "tools", "tools[0] must be an object"},
        Rejection{kChat, chat(R"("chat_template_kwargs":[])"), "chat_template_kwargs",
                  "must be an object, got array"},
        Rejection{kChat, chat(R"("add_generation_prompt":1)"), "add_generation_prompt",
                  "must be a boolean, got number"},
        Rejection{kChat, chat(R"("add_generation_prompt":true,"continue_final_message":true)"),
                  "continue_final_message", "cannot both be true"}));

INSTANTIATE_TEST_SUITE_P(
    Sampling, RejectionTest,
    ::testing::Values(
        Rejection{kCmpl, completions(R"("temperature":"0.5")"), "temperature",
                  "temperature must be a number, got string"},
        Rejection{kCmpl, completions(R"("temperature":true)"), "temperature", "got boolean"},
        Rejection{kCmpl, completions(R"("temperature":-0.1)"), "temperature", ">= 0"},
        Rejection{kCmpl, completions(R"("temperature":1e300)"), "temperature", ">= 0"},
        Rejection{kCmpl, completions(R"("top_p":0)"), "top_p", "(0, 1]"},
        Rejection{kCmpl, completions(R"("top_p":1.5)"), "top_p", "(0, 1]"},
        Rejection{kCmpl, completions(R"("top_k":-2)"), "top_k", "got -2"},
        Rejection{kCmpl, completions(R"("top_k":2.5)"), "top_k", "top_k must be an integer"},
        Rejection{kCmpl, completions(R"("min_p":1.5)"), "min_p", "[0, 1]"},
        Rejection{kCmpl, completions(R"("repetition_penalty":0)"), "repetition_penalty", "> 0"},
        Rejection{kCmpl, completions(R"("presence_penalty":2.5)"), "presence_penalty", "[-2, 2]"},
        Rejection{kCmpl, completions(R"("frequency_penalty":-3)"), "frequency_penalty", "[-2, 2]"},
        Rejection{kCmpl, completions(R"("seed":"1")"), "seed", "seed must be an integer"},
        Rejection{kCmpl, completions(R"("seed":1.5)"), "seed", "seed must be an integer"},
        Rejection{kCmpl, completions(R"("max_tokens":0)"), "max_tokens",
                  "max_tokens must be at least 1, got 0"},
        Rejection{kCmpl, completions(R"("max_tokens":-5)"), "max_tokens", "at least 1"},
        Rejection{kCmpl, completions(R"("max_tokens":"16")"), "max_tokens", "got string"},
        Rejection{kCmpl, completions(R"("max_tokens":1e12)"), "max_tokens",
                  "must be at most 2147483647"},
        Rejection{kChat, chat(R"("max_completion_tokens":0,"max_tokens":5)"),
                  "max_completion_tokens", "max_completion_tokens must be at least 1"},
        Rejection{kCmpl, completions(R"("n":0)"), "n", "n must be in [1, 128], got 0"},
        Rejection{kCmpl, completions(R"("n":129)"), "n", "got 129"},
        Rejection{kCmpl, completions(R"("n":"2")"), "n", "n must be an integer, got string"},
        Rejection{kCmpl, completions(R"("stop":5)"), "stop", "string or an array of strings"},
        Rejection{kCmpl, completions(R"("stop":["a",1])"), "stop", "holding a number"},
        Rejection{kCmpl, completions(R"("stop":[)" + [] {
          std::string items = R"("s")";
          for (int i = 1; i < GenerationRequest::kMaxStopStrings + 1; ++i) items += R"(,"s")";
          return items;
        }() + "]"), "stop", "at most 32 strings, got 33"},
        Rejection{kCmpl, completions(R"("stop_token_ids":"2")"), "stop_token_ids",
                  "must be an array"},
        Rejection{kCmpl, completions(R"("stop_token_ids":["2"])"), "stop_token_ids",
                  "must hold token ids"},
        Rejection{kCmpl, completions(R"("stop_token_ids":[-1])"), "stop_token_ids", ">= 0"},
        Rejection{kCmpl, completions(R"("ignore_eos":"yes")"), "ignore_eos", "must be a boolean"}));

INSTANTIATE_TEST_SUITE_P(
    LogprobsAndStreaming, RejectionTest,
    ::testing::Values(
        Rejection{kCmpl, completions(R"("logprobs":21)"), "logprobs", "[0, 20], got 21"},
        Rejection{kCmpl, completions(R"("logprobs":true)"), "logprobs", "must be an integer"},
        Rejection{kChat, chat(R"("logprobs":1)"), "logprobs", "must be a boolean"},
        Rejection{kChat, chat(R"("top_logprobs":2)"), "top_logprobs",
                  "top_logprobs requires logprobs to be true"},
        Rejection{kChat, chat(R"("logprobs":false,"top_logprobs":0)"), "top_logprobs",
                  "requires logprobs"},
        Rejection{kChat, chat(R"("logprobs":true,"top_logprobs":21)"), "top_logprobs",
                  "[0, 20]"},
        Rejection{kCmpl, completions(R"("stream":"true")"), "stream", "must be a boolean"},
        Rejection{kCmpl, completions(R"("stream_options":{"include_usage":true})"),
                  "stream_options", "only allowed when stream is true"},
        Rejection{kChat, chat(R"("stream":false,"stream_options":{})"), "stream_options",
                  "only allowed when stream is true"},
        Rejection{kChat, chat(R"("stream":true,"stream_options":5)"), "stream_options",
                  "must be an object"},
        Rejection{kChat, chat(R"("stream":true,"stream_options":{"include_usage":"y"})"),
                  "stream_options.include_usage",
                  "stream_options.include_usage must be a boolean, got string"},
        Rejection{kCmpl, completions(R"("user":5)"), "user", "must be a string"},
        Rejection{kCmpl, completions(R"("echo":1)"), "echo", "must be a boolean"},
        Rejection{kCmpl, completions(R"("skip_special_tokens":"no")"), "skip_special_tokens",
                  "must be a boolean"}));

INSTANTIATE_TEST_SUITE_P(
    Unsupported, RejectionTest,
    ::testing::Values(
        Rejection{kCmpl, completions(R"("suffix":"end")"), "suffix", "suffix is not supported"},
        Rejection{kCmpl, completions(R"("suffix":3)"), "suffix", "must be a string"},
        Rejection{kChat, chat(R"("response_format":{"type":"xml"})"), "response_format.type",
                  "response_format.type must be 'text', 'json_object' or 'json_schema', got 'xml'"},
        Rejection{kChat, chat(R"("response_format":{})"), "response_format.type",
                  "response_format.type is required"},
        Rejection{kChat, chat(R"("response_format":{"type":1})"), "response_format.type",
                  "response_format.type must be a string"},
        Rejection{kChat, chat(R"("response_format":"text")"), "response_format",
                  "must be an object"},
        Rejection{kChat, chat(R"("logit_bias":[1])"), "logit_bias", "must be an object"},
        Rejection{kCmpl, completions(R"("best_of":2)"), "best_of",
                  "best_of greater than n is not supported"},
        Rejection{kCmpl, completions(R"("n":3,"best_of":2)"), "best_of",
                  "best_of must be at least n (3), got 2"}));

INSTANTIATE_TEST_SUITE_P(
    LogitBias, RejectionTest,
    ::testing::Values(
        Rejection{kCmpl, completions(R"("logit_bias":{"x1":1})"), "logit_bias",
                  "logit_bias keys must be token ids, got \"x1\""},
        Rejection{kCmpl, completions(R"("logit_bias":{"-1":1})"), "logit_bias",
                  "logit_bias keys must be token ids"},
        Rejection{kChat, chat(R"("logit_bias":{"99999999999":1})"), "logit_bias",
                  "logit_bias keys must be token ids"},
        Rejection{kChat, chat(R"("logit_bias":{"5":"up"})"), "logit_bias",
                  "logit_bias values must be numbers, got \"up\" for token 5"},
        Rejection{kCmpl, completions(R"("logit_bias":{"5":101})"), "logit_bias",
                  "logit_bias values must be in [-100, 100], got 101 for token 5"},
        Rejection{kChat, chat(R"("logit_bias":{"5":-1e300})"), "logit_bias",
                  "logit_bias values must be in [-100, 100], got -inf"}));

TEST(ParseRequestTest, ReportsTheFirstProblemInReadingOrder) {
  ParseResult result = parseGenerationRequest(
      R"({"model":"m","prompt":"x","temperature":"hot","n":0})", Endpoint::kCompletions);
  ASSERT_TRUE(std::holds_alternative<openai::ApiError>(result));
  EXPECT_EQ(std::get<openai::ApiError>(result).param, "temperature");
}

}  // namespace
}  // namespace tandem::openai
