// Admission: credentials, capacity, the model, prompts into tokens, prompt
// limits with typed reasons, and the generator's refusals classified.
#include "router/generate/admission.h"

#include <gtest/gtest.h>

#include "router/generate/admission_api_error.h"
#include "tests/router/generate/stories_serving.h"
#include "tests/stories_oracle.h"

namespace tandem::router {
namespace {

using testing::StoriesServing;

class AdmissionTest : public ::testing::Test {
 protected:
  static constexpr int kMaxModelLen = 64;

  AdmissionTest() : serving_(kMaxModelLen) {}

  Admission make(AdmissionOptions options = {}) { return Admission(serving_.context(), options); }

  static openai::GenerationRequest completion(std::string prompt) {
    openai::GenerationRequest r;
    r.model = testing::kModelName;
    r.prompts.push_back(openai::Prompt{.text = std::move(prompt)});
    return r;
  }
  static openai::GenerationRequest tokenCompletion(std::vector<int32_t> ids) {
    openai::GenerationRequest r;
    r.model = testing::kModelName;
    r.prompts.push_back(openai::Prompt{.token_ids = std::move(ids), .is_tokens = true});
    return r;
  }

  static AdmissionError errorOf(std::variant<std::vector<TokenizedPrompt>, AdmissionError> r) {
    EXPECT_TRUE(std::holds_alternative<AdmissionError>(r));
    return std::holds_alternative<AdmissionError>(r) ? std::get<AdmissionError>(r) : AdmissionError{};
  }

  StoriesServing serving_;
};

TEST_F(AdmissionTest, AcceptsAnyKeyWhenNoneIsConfigured) {
  EXPECT_FALSE(make().checkCredentials("").has_value());
}

TEST_F(AdmissionTest, AcceptsOnlyAConfiguredBearerKey) {
  Admission admission = make({.api_keys = {"k1", "k2"}});
  EXPECT_FALSE(admission.checkCredentials("Bearer k2").has_value());
  EXPECT_FALSE(admission.checkCredentials("bearer k1").has_value());
  for (const char* bad : {"", "k1", "Bearer k", "Bearer k12", "Basic k1"}) {
    std::optional<AdmissionError> e = admission.checkCredentials(bad);
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(e->reason, AdmissionReason::kUnauthenticated);
  }
}

TEST_F(AdmissionTest, ReservesSlotsUpToTheLimitAndReleasesThemWhenDestroyed) {
  Admission admission = make({.max_pending_requests = 2});
  auto a = admission.reserve();
  auto b = admission.reserve();
  ASSERT_TRUE(std::holds_alternative<AdmissionSlot>(a));
  ASSERT_TRUE(std::holds_alternative<AdmissionSlot>(b));
  EXPECT_EQ(admission.pending(), 2);
  auto c = admission.reserve();
  ASSERT_TRUE(std::holds_alternative<AdmissionError>(c));
  EXPECT_EQ(std::get<AdmissionError>(c).reason, AdmissionReason::kOverloaded);
  EXPECT_EQ(admission.pending(), 2);
  EXPECT_EQ(serving_.metric("tandem:requests_rejected_total"), 1);
  a = AdmissionError{};  // releases the first slot
  EXPECT_EQ(admission.pending(), 1);
  EXPECT_TRUE(std::holds_alternative<AdmissionSlot>(admission.reserve()));
}

TEST_F(AdmissionTest, RefusesSlotsWhileNotReadyOrDraining) {
  Admission admission = make();
  serving_.generator.setReady(false);
  auto r = admission.reserve();
  ASSERT_TRUE(std::holds_alternative<AdmissionError>(r));
  EXPECT_EQ(std::get<AdmissionError>(r).reason, AdmissionReason::kNotReady);
  serving_.generator.setReady(true);
  admission.setDraining();
  r = admission.reserve();
  ASSERT_TRUE(std::holds_alternative<AdmissionError>(r));
  EXPECT_EQ(std::get<AdmissionError>(r).reason, AdmissionReason::kDraining);
  EXPECT_EQ(admission.pending(), 0);
}

TEST_F(AdmissionTest, TokenizesATextPromptWithBosAndKeepsItsTextForEcho) {
  const auto& oracle = tandem::testing::storiesOracle()[0];
  openai::GenerationRequest request = completion(oracle.prompt);
  auto r = make().prepare(request);
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(r));
  const auto& prompts = std::get<std::vector<TokenizedPrompt>>(r);
  ASSERT_EQ(prompts.size(), 1u);
  EXPECT_EQ(prompts[0].tokens, oracle.prompt_ids);
  EXPECT_EQ(prompts[0].text, oracle.prompt);
}

TEST_F(AdmissionTest, FillsInMaxTokensWhenTheRequestLeftItOut) {
  openai::GenerationRequest request = completion("Once");
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(make().prepare(request)));
  EXPECT_EQ(request.sampling.max_tokens, 16);

  openai::GenerationRequest chat;
  chat.endpoint = openai::Endpoint::kChatCompletions;
  chat.model = testing::kModelName;
  chat.messages = nlohmann::ordered_json::parse(R"([{"role":"user","content":"Once"}])");
  auto r = make().prepare(chat);
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(r));
  const int prompt_len = std::get<std::vector<TokenizedPrompt>>(r)[0].tokens.size();
  EXPECT_EQ(chat.sampling.max_tokens, kMaxModelLen - prompt_len);
}

TEST_F(AdmissionTest, RefusesAnotherModelUnlessEmptyMeansTheServedOne) {
  openai::GenerationRequest request = completion("Once");
  request.model = "gpt-9";
  AdmissionError e = errorOf(make().prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kUnknownModel);
  EXPECT_EQ(e.field, "model");
  EXPECT_EQ(e.message, "the model 'gpt-9' does not exist; this server serves 'stories260K'");

  request.model = "";
  EXPECT_EQ(errorOf(make().prepare(request)).reason, AdmissionReason::kUnknownModel);
  EXPECT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(
      make({.empty_model_is_served = true}).prepare(request)));
}

TEST_F(AdmissionTest, RefusesAnEmptyPrompt) {
  openai::GenerationRequest request = tokenCompletion({});
  AdmissionError e = errorOf(make().prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kEmptyPrompt);
  EXPECT_EQ(e.message, "the prompt is empty");
}

TEST_F(AdmissionTest, APromptFillingTheContextIsContextLengthExceeded) {
  openai::GenerationRequest request = tokenCompletion(std::vector<int32_t>(kMaxModelLen, 5));
  AdmissionError e = errorOf(make().prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_EQ(e.field, "prompt");
  EXPECT_EQ(e.message, "this model's maximum context length is 64 tokens, but the prompt has 64 tokens");
  const openai::ApiError api = toApiError(e);
  EXPECT_EQ(api.status, 400);
  EXPECT_EQ(api.code, "context_length_exceeded");
  EXPECT_EQ(api.param, "prompt");
}

TEST_F(AdmissionTest, APromptOverTheServerLimitIsPromptTooLong) {
  openai::GenerationRequest request = tokenCompletion(std::vector<int32_t>(10, 5));
  AdmissionError e = errorOf(make({.max_prompt_tokens = 8}).prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kPromptTooLong);
  EXPECT_EQ(e.message,
            "this model's maximum context length is 64 tokens, but the prompt has 10 tokens (the "
            "server allows at most 8)");
  EXPECT_EQ(toApiError(e).code, "context_length_exceeded");
}

TEST_F(AdmissionTest, MaxTokensBeyondTheContextIsContextLengthExceededOnMaxTokens) {
  openai::GenerationRequest request = tokenCompletion(std::vector<int32_t>(10, 5));
  request.max_tokens_set = true;
  request.sampling.max_tokens = 55;
  AdmissionError e = errorOf(make().prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_EQ(e.field, "max_tokens");
  request.sampling.max_tokens = 54;
  EXPECT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(make().prepare(request)));
}

// prompt + max_tokens is summed in 64 bits: INT32_MAX would overflow an int
// (undefined behaviour, caught by UBSan in the sanitizer pass).
TEST_F(AdmissionTest, TheLargestMaxTokensIsContextLengthExceededNotAnOverflow) {
  openai::GenerationRequest request = tokenCompletion(std::vector<int32_t>(10, 5));
  request.max_tokens_set = true;
  request.sampling.max_tokens = 2147483647;
  AdmissionError e = errorOf(make().prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_EQ(e.field, "max_tokens");
  EXPECT_EQ(e.message,
            "this model's maximum context length is 64 tokens, but 2147483657 were requested (10 "
            "in the prompt, 2147483647 for the completion); lower max_tokens or shorten the prompt");
}

TEST_F(AdmissionTest, SkipsPromptLimitsWhenTheyAreOff) {
  openai::GenerationRequest request = tokenCompletion(std::vector<int32_t>(100, 5));
  auto r = make({.check_prompt_length = false}).prepare(request);
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(r));
  EXPECT_EQ(std::get<std::vector<TokenizedPrompt>>(r)[0].tokens.size(), 100u);
}

TEST_F(AdmissionTest, ClassifiesTheGeneratorsRefusalsByTypeNotByMessage) {
  Admission admission = make();
  serving_.generator.setMaxModelLen(32);
  EXPECT_EQ(admission.submitRefused(absl::UnavailableError("no worker"), 5).reason,
            AdmissionReason::kNotReady);
  // shed by the router (no worker meets the TTFT SLO): try again later.
  EXPECT_EQ(admission.submitRefused(absl::ResourceExhaustedError("slo"), 5).reason,
            AdmissionReason::kOverloaded);
  // the generator's context is smaller than the served model says.
  AdmissionError e = admission.submitRefused(absl::InvalidArgumentError("too long"), 32);
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_EQ(e.message, "too long");
  EXPECT_EQ(toApiError(e).code, "context_length_exceeded");
  // a message that speaks of the context length decides nothing.
  EXPECT_EQ(admission.submitRefused(absl::InvalidArgumentError("the context length"), 31).reason,
            AdmissionReason::kInvalidRequest);
}

}  // namespace
}  // namespace tandem::router
