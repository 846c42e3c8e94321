// The one request-limits rule: each limit refuses with InvalidArgument, its
// message, and its LimitKind as the status's payload; what is within every
// limit passes; unknown limits (0) are not checked.
#include "generation/request_limits.h"

#include <gtest/gtest.h>

#include <vector>

namespace tandem::generation {
namespace {

constexpr RequestLimits kLimits{.max_model_len = 64,
                                .max_prompt_tokens = 0,
                                .vocab_size = 512,
                                .max_kv_tokens = 48,
                                .max_admitted_seqs = 8,
                                .max_admitted_prompt_tokens = 100};

SamplingParams maxTokens(int n) {
  SamplingParams p;
  p.max_tokens = n;
  return p;
}

void expectRefused(const absl::Status& status, LimitKind kind, const std::string& message) {
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_EQ(limitKind(status), kind) << status;
  EXPECT_EQ(status.message(), message);
}

TEST(RequestLimitsTest, APromptThatLeavesNoRoomToGenerateBreaksTheContext) {
  expectRefused(checkRequest(kLimits, std::vector<int32_t>(64, 1), maxTokens(1)),
                LimitKind::kContextLength,
                "this model's maximum context length is 64 tokens, but the prompt has 64 tokens");
  EXPECT_TRUE(checkRequest(kLimits, std::vector<int32_t>(40, 1), maxTokens(1)).ok());
}

TEST(RequestLimitsTest, APromptOverTheServersLimitBreaksThePromptLength) {
  RequestLimits limits = kLimits;
  limits.max_prompt_tokens = 8;
  expectRefused(checkPromptLength(limits, 9, "9 tokens"), LimitKind::kPromptLength,
                "this model's maximum context length is 64 tokens, but the prompt has 9 tokens "
                "(the server allows at most 8)");
  EXPECT_TRUE(checkPromptLength(limits, 8, "8 tokens").ok());
  // past the context too: the context is what it breaks.
  EXPECT_EQ(limitKind(checkPromptLength(limits, 64, "64 tokens")), LimitKind::kContextLength);
}

TEST(RequestLimitsTest, AnExplicitMaxTokensMustFitTheContextWithThePrompt) {
  expectRefused(checkCompletionLength(kLimits, 10, 2147483647), LimitKind::kContextLength,
                "this model's maximum context length is 64 tokens, but 2147483657 were requested "
                "(10 in the prompt, 2147483647 for the completion); lower max_tokens or shorten "
                "the prompt");
  EXPECT_TRUE(checkCompletionLength(kLimits, 10, 54).ok());
}

TEST(RequestLimitsTest, TokenIdsOutsideTheVocabularyAreRefusedWhereverTheyStand) {
  expectRefused(checkRequest(kLimits, std::vector<int32_t>{1, 512}, maxTokens(1)), LimitKind::kVocabulary,
                "prompt token id 512 is outside the vocabulary [0, 512)");
  expectRefused(checkRequest(kLimits, std::vector<int32_t>{1, -1}, maxTokens(1)), LimitKind::kVocabulary,
                "prompt token id -1 is outside the vocabulary [0, 512)");
  SamplingParams biased = maxTokens(1);
  biased.logit_bias = {{3, 1.0f}, {600, 1.0f}};
  expectRefused(checkRequest(kLimits, std::vector<int32_t>{1, 2}, biased), LimitKind::kVocabulary,
                "logit_bias token id 600 is outside the vocabulary [0, 512)");
}

TEST(RequestLimitsTest, PromptAndMaxTokensMustFitOneWholeCache) {
  // 10 + 40 = 50 tokens store 49 of KV; the cache holds 48.
  expectRefused(checkRequest(kLimits, std::vector<int32_t>(10, 1), maxTokens(40)),
                LimitKind::kCacheFit,
                "prompt (10 tokens) plus max_tokens (40) needs 49 tokens of kv cache but a cache "
                "holds only 48; lower max_tokens or shorten the prompt");
  EXPECT_TRUE(checkRequest(kLimits, std::vector<int32_t>(10, 1), maxTokens(39)).ok());
  // generation stops at the context: a larger max_tokens costs no more.
  RequestLimits roomy = kLimits;
  roomy.max_kv_tokens = 63;
  EXPECT_TRUE(checkRequest(roomy, std::vector<int32_t>(10, 1), maxTokens(1 << 30)).ok());
}

TEST(RequestLimitsTest, MoreSequencesOrPromptTokensThanTheBudgetBreakIt) {
  expectRefused(checkBudget(kLimits, 9, "3 prompts, n = 3", 0), LimitKind::kAdmissionBudget,
                "the request asks for 9 sequences (3 prompts, n = 3); the server admits at most 8 "
                "at once");
  expectRefused(checkBudget(kLimits, 2, "", 101), LimitKind::kAdmissionBudget,
                "the request's prompts hold 101 tokens over its 2 sequences; the server admits at "
                "most 100 prompt tokens at once");
  EXPECT_TRUE(checkBudget(kLimits, 8, "", 100).ok());
}

TEST(RequestLimitsTest, OtherRefusalsCarryNoLimit) {
  const absl::Status empty = checkRequest(kLimits, {}, maxTokens(1));
  EXPECT_EQ(empty.message(), "the prompt is empty");
  EXPECT_EQ(limitKind(empty), std::nullopt);
  SamplingParams bad = maxTokens(1);
  bad.top_p = 2.0f;
  EXPECT_EQ(checkRequest(kLimits, std::vector<int32_t>{1}, bad).message(), "top_p must be in (0, 1], got 2");
  SamplingParams replay = maxTokens(1);
  replay.grammar = "root ::= \"a\"";
  replay.grammar_replay_tokens = 3;
  EXPECT_EQ(checkRequest(kLimits, std::vector<int32_t>{1, 2}, replay).message(),
            "grammar_replay_tokens (3) exceeds the prompt's 2 tokens");
  EXPECT_EQ(limitKind(absl::InvalidArgumentError("context_length")), std::nullopt);
  EXPECT_EQ(limitKind(absl::OkStatus()), std::nullopt);
}

TEST(RequestLimitsTest, UnknownLimitsAreNotChecked) {
  EXPECT_TRUE(checkRequest({}, std::vector<int32_t>(100000, 70000), maxTokens(1 << 30)).ok());
  EXPECT_TRUE(checkBudget({}, 1 << 30, "", int64_t{1} << 40).ok());
  // a negative id is outside any vocabulary.
  EXPECT_EQ(limitKind(checkRequest({}, std::vector<int32_t>{-1}, maxTokens(1))), LimitKind::kVocabulary);
}

}  // namespace
}  // namespace tandem::generation
