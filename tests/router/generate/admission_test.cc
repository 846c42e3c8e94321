// Admission: credentials, capacity (requests, sequences, prompt tokens),
// the preparing threads, the model, prompts into tokens, prompt limits with
// typed reasons, and the generator's refusals classified.
#include "router/generate/admission.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "generation/request_limits.h"
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

  std::unique_ptr<Admission> make(AdmissionOptions options = {}) {
    return std::make_unique<Admission>(serving_.context(), options);
  }

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
  EXPECT_FALSE(make()->checkCredentials("").has_value());
}

TEST_F(AdmissionTest, AcceptsOnlyAConfiguredBearerKey) {
  auto owner = make({.api_keys = {"k1", "k2"}});
  Admission& admission = *owner;
  EXPECT_FALSE(admission.checkCredentials("Bearer k2").has_value());
  EXPECT_FALSE(admission.checkCredentials("bearer k1").has_value());
  for (const char* bad : {"", "k1", "Bearer k", "Bearer k12", "Basic k1"}) {
    std::optional<AdmissionError> e = admission.checkCredentials(bad);
    ASSERT_TRUE(e.has_value()) << bad;
    EXPECT_EQ(e->reason, AdmissionReason::kUnauthenticated);
  }
}

TEST_F(AdmissionTest, ReservesSlotsUpToTheLimitAndReleasesThemWhenDestroyed) {
  auto owner = make({.max_pending_requests = 2});
  Admission& admission = *owner;
  auto a = admission.reserve();
  auto b = admission.reserve();
  ASSERT_TRUE(std::holds_alternative<AdmissionSlot>(a));
  ASSERT_TRUE(std::holds_alternative<AdmissionSlot>(b));
  EXPECT_EQ(admission.pending(), 2);
  auto c = admission.reserve();
  ASSERT_TRUE(std::holds_alternative<AdmissionError>(c));
  EXPECT_EQ(std::get<AdmissionError>(c).reason, AdmissionReason::kOverloaded);
  EXPECT_EQ(admission.pending(), 2);
  EXPECT_EQ(serving_.metric("tandem:requests_rejected_total{limit=\"requests\"}"), 1);
  a = AdmissionError{};  // releases the first slot
  EXPECT_EQ(admission.pending(), 1);
  EXPECT_TRUE(std::holds_alternative<AdmissionSlot>(admission.reserve()));
}

TEST_F(AdmissionTest, RefusesSlotsWhileNotReadyOrDraining) {
  auto owner = make();
  Admission& admission = *owner;
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
  auto r = make()->prepare(request);
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(r));
  const auto& prompts = std::get<std::vector<TokenizedPrompt>>(r);
  ASSERT_EQ(prompts.size(), 1u);
  EXPECT_EQ(prompts[0].tokens, oracle.prompt_ids);
  EXPECT_EQ(prompts[0].text, oracle.prompt);
}

TEST_F(AdmissionTest, FillsInMaxTokensWhenTheRequestLeftItOut) {
  openai::GenerationRequest request = completion("Once");
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(make()->prepare(request)));
  EXPECT_EQ(request.sampling.max_tokens, 16);

  openai::GenerationRequest chat;
  chat.endpoint = openai::Endpoint::kChatCompletions;
  chat.model = testing::kModelName;
  chat.messages = nlohmann::ordered_json::parse(R"([{"role":"user","content":"Once"}])");
  auto r = make()->prepare(chat);
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(r));
  const int prompt_len = std::get<std::vector<TokenizedPrompt>>(r)[0].tokens.size();
  EXPECT_EQ(chat.sampling.max_tokens, kMaxModelLen - prompt_len);
}

TEST_F(AdmissionTest, RefusesAnotherModel) {
  openai::GenerationRequest request = completion("Once");
  request.model = "gpt-9";
  AdmissionError e = errorOf(make()->prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kUnknownModel);
  EXPECT_EQ(e.field, "model");
  EXPECT_EQ(e.message, "the model 'gpt-9' does not exist; this server serves 'stories260K'");

  request.model = "";
  EXPECT_EQ(errorOf(make()->prepare(request)).reason, AdmissionReason::kUnknownModel);
}

TEST_F(AdmissionTest, RefusesAnEmptyPrompt) {
  openai::GenerationRequest request = tokenCompletion({});
  AdmissionError e = errorOf(make()->prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kEmptyPrompt);
  EXPECT_EQ(e.message, "the prompt is empty");
}

TEST_F(AdmissionTest, APromptFillingTheContextIsContextLengthExceeded) {
  openai::GenerationRequest request = tokenCompletion(std::vector<int32_t>(kMaxModelLen, 5));
  AdmissionError e = errorOf(make()->prepare(request));
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
  AdmissionError e = errorOf(make({.max_prompt_tokens = 8})->prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kPromptTooLong);
  EXPECT_EQ(e.message,
            "this model's maximum context length is 64 tokens, but the prompt has 10 tokens (the "
            "server allows at most 8)");
  EXPECT_EQ(toApiError(e).code, "context_length_exceeded");
}

// stories260K's tokens stand for at most 9 bytes each: 63 tokens (the most
// a prompt may have in a 64-token context) are at most 567 bytes, so a
// longer text is refused by its length, before the tokenizer sees it.
TEST_F(AdmissionTest, ATextThatCannotFitByItsBytesIsRefusedBeforeTokenizing) {
  ASSERT_EQ(serving_.model->tokenizer().maxInputBytesPerToken(), 9u);
  openai::GenerationRequest request = completion(std::string(568, 'a'));
  AdmissionError e = errorOf(make()->prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_EQ(e.field, "prompt");
  EXPECT_EQ(e.message,
            "this model's maximum context length is 64 tokens, but the prompt has 568 bytes, so "
            "at least 64 tokens (a token of this model stands for at most 9 bytes)");
  EXPECT_EQ(toApiError(e).code, "context_length_exceeded");
  // at 567 bytes the text may fit: it is tokenized, and its tokens decide.
  request = completion(std::string(567, 'a'));
  e = errorOf(make()->prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_TRUE(e.message.ends_with(" tokens")) << e.message;
  // under the server's prompt limit the refusal says so.
  request = completion(std::string(100, 'a'));
  e = errorOf(make({.max_prompt_tokens = 8})->prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kPromptTooLong);
  EXPECT_EQ(e.message,
            "this model's maximum context length is 64 tokens, but the prompt has 100 bytes, so "
            "at least 12 tokens (a token of this model stands for at most 9 bytes) (the server "
            "allows at most 8)");
}

TEST_F(AdmissionTest, ARenderedChatThatCannotFitByItsBytesIsRefusedBeforeTokenizing) {
  openai::GenerationRequest request;
  request.endpoint = openai::Endpoint::kChatCompletions;
  request.model = testing::kModelName;
  request.messages = nlohmann::ordered_json::array(
      {{{"role", "user"}, {"content", std::string(100000, 'x')}}});
  AdmissionError e = errorOf(make()->prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_EQ(e.field, "messages");
  EXPECT_NE(e.message.find("the prompt has 100003 bytes"), std::string::npos) << e.message;
}

TEST_F(AdmissionTest, MaxTokensBeyondTheContextIsContextLengthExceededOnMaxTokens) {
  openai::GenerationRequest request = tokenCompletion(std::vector<int32_t>(10, 5));
  request.max_tokens_set = true;
  request.sampling.max_tokens = 55;
  AdmissionError e = errorOf(make()->prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_EQ(e.field, "max_tokens");
  request.sampling.max_tokens = 54;
  EXPECT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(make()->prepare(request)));
}

// prompt + max_tokens is summed in 64 bits: INT32_MAX would overflow an int
// (undefined behaviour, caught by UBSan in the sanitizer pass).
TEST_F(AdmissionTest, TheLargestMaxTokensIsContextLengthExceededNotAnOverflow) {
  openai::GenerationRequest request = tokenCompletion(std::vector<int32_t>(10, 5));
  request.max_tokens_set = true;
  request.sampling.max_tokens = 2147483647;
  AdmissionError e = errorOf(make()->prepare(request));
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_EQ(e.field, "max_tokens");
  EXPECT_EQ(e.message,
            "this model's maximum context length is 64 tokens, but 2147483657 were requested (10 "
            "in the prompt, 2147483647 for the completion); lower max_tokens or shorten the prompt");
}

TEST_F(AdmissionTest, ClassifiesTheGeneratorsRefusalsByTypeNotByMessage) {
  auto owner = make();
  Admission& admission = *owner;
  EXPECT_EQ(admission.submitRefused(absl::UnavailableError("no worker")).reason,
            AdmissionReason::kNotReady);
  // shed by the router (no worker meets the TTFT SLO): try again later.
  EXPECT_EQ(admission.submitRefused(absl::ResourceExhaustedError("slo")).reason,
            AdmissionReason::kOverloaded);
  // the generator's context is smaller than the served model says: its
  // refusal names the limit it checked.
  const generation::RequestLimits generator{.max_model_len = 32};
  const absl::Status too_long =
      generation::checkRequest(generator, std::vector<int32_t>(32, 1), {});
  AdmissionError e = admission.submitRefused(too_long);
  EXPECT_EQ(e.reason, AdmissionReason::kContextLengthExceeded);
  EXPECT_EQ(e.message, too_long.message());
  EXPECT_EQ(toApiError(e).code, "context_length_exceeded");
  // a message that speaks of the context length decides nothing.
  EXPECT_EQ(admission.submitRefused(absl::InvalidArgumentError("the context length")).reason,
            AdmissionReason::kInvalidRequest);
}

// a request costs its sequences (prompts × n), not 1: two requests with n = 4
// fill a budget of 8.
TEST_F(AdmissionTest, CountsSequencesNotRequests) {
  auto owner = make({.max_admitted_seqs = 8});
  Admission& admission = *owner;
  auto admitOne = [&](AdmissionSlot& slot) {
    openai::GenerationRequest request = completion("Once");
    request.n = 4;
    return admission.admit(slot, request);
  };
  std::vector<AdmissionSlot> slots;
  for (int i = 0; i < 3; ++i) slots.push_back(std::get<AdmissionSlot>(admission.reserve()));
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(admitOne(slots[0])));
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(admitOne(slots[1])));
  EXPECT_EQ(slots[0].seqs(), 4);
  EXPECT_EQ(admission.admittedSeqs(), 8);
  AdmissionError e = errorOf(admitOne(slots[2]));
  EXPECT_EQ(e.reason, AdmissionReason::kOverloaded);
  EXPECT_EQ(toApiError(e).status, 429);
  EXPECT_EQ(serving_.metric("tandem:requests_rejected_total{limit=\"seqs\"}"), 1);
  EXPECT_EQ(slots[2].seqs(), 0);
  EXPECT_EQ(admission.admittedSeqs(), 8);
  // a call that ends gives its sequences back.
  slots[0] = AdmissionSlot();
  EXPECT_EQ(admission.admittedSeqs(), 4);
  EXPECT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(admitOne(slots[2])));
  EXPECT_EQ(serving_.metric("tandem:admitted_seqs"), 8);
}

// 1024 prompts × n = 128 is 131072 sequences: more than the whole budget,
// so a 400 naming n, found before any prompt is tokenized, costing nothing.
TEST_F(AdmissionTest, ARequestLargerThanTheWholeBudgetIsTooLargeAndCostsNothing) {
  auto owner = make();
  Admission& admission = *owner;
  openai::GenerationRequest request;
  request.model = testing::kModelName;
  request.n = openai::GenerationRequest::kMaxN;
  for (int i = 0; i < openai::GenerationRequest::kMaxPrompts; ++i) {
    request.prompts.push_back(openai::Prompt{.text = "Once upon a time"});
  }
  AdmissionSlot slot = std::get<AdmissionSlot>(admission.reserve());
  AdmissionError e = errorOf(admission.admit(slot, request));
  EXPECT_EQ(e.reason, AdmissionReason::kRequestTooLarge);
  EXPECT_EQ(e.field, "n");
  EXPECT_EQ(e.message,
            "the request asks for 131072 sequences (1024 prompts, n = 128); the server admits "
            "at most 1024 at once");
  EXPECT_EQ(toApiError(e).status, 400);
  EXPECT_EQ(slot.seqs(), 0);
  EXPECT_EQ(admission.admittedSeqs(), 0);
  EXPECT_EQ(admission.admittedPromptTokens(), 0);
}

// every choice carries its prompt to the generator: 5 tokens × n = 4 cost 20.
TEST_F(AdmissionTest, CountsPromptTokensOncePerSequence) {
  auto owner = make({.max_admitted_prompt_tokens = 20});
  Admission& admission = *owner;
  auto request = [](int tokens, int n) {
    openai::GenerationRequest r = tokenCompletion(std::vector<int32_t>(tokens, 5));
    r.n = n;
    return r;
  };
  AdmissionSlot a = std::get<AdmissionSlot>(admission.reserve());
  AdmissionSlot b = std::get<AdmissionSlot>(admission.reserve());
  openai::GenerationRequest too_large = request(6, 4);
  AdmissionError e = errorOf(admission.admit(a, too_large));
  EXPECT_EQ(e.reason, AdmissionReason::kRequestTooLarge);
  EXPECT_EQ(e.field, "prompt");
  openai::GenerationRequest fits = request(5, 4);
  ASSERT_TRUE(std::holds_alternative<std::vector<TokenizedPrompt>>(admission.admit(a, fits)));
  EXPECT_EQ(a.promptTokens(), 20);
  EXPECT_EQ(admission.admittedPromptTokens(), 20);
  openai::GenerationRequest one = request(1, 1);
  EXPECT_EQ(errorOf(admission.admit(b, one)).reason, AdmissionReason::kOverloaded);
  EXPECT_EQ(serving_.metric("tandem:requests_rejected_total{limit=\"prompt_tokens\"}"), 1);
  a = AdmissionSlot();
  EXPECT_EQ(admission.admittedPromptTokens(), 0);
  EXPECT_EQ(admission.pending(), 1);
}

TEST_F(AdmissionTest, OffloadsToItsOwnThreadsAndRefusesBeyondTheQueue) {
  auto owner = make({.prepare_threads = 1, .max_queued_prepares = 1});
  Admission& admission = *owner;
  std::mutex mu;
  std::condition_variable changed;
  bool entered = false;
  bool release = false;
  std::thread::id ran_on;
  ASSERT_FALSE(admission.offload([&] {
    std::unique_lock lock(mu);
    entered = true;
    ran_on = std::this_thread::get_id();
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
  }));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return entered; }));
  }
  EXPECT_NE(ran_on, std::this_thread::get_id());
  std::atomic<bool> second_ran{false};
  ASSERT_FALSE(admission.offload([&] { second_ran = true; }));  // waits in the queue
  std::optional<AdmissionError> e = admission.offload([] {});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->reason, AdmissionReason::kOverloaded);
  EXPECT_EQ(serving_.metric("tandem:requests_rejected_total{limit=\"prepare_queue\"}"), 1);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  changed.notify_all();
  admission.stop();  // runs what is queued
  EXPECT_TRUE(second_ran);
  e = admission.offload([] {});
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->reason, AdmissionReason::kDraining);
}

// a task on one lane blocked: the other lane's tasks run all the same.
TEST_F(AdmissionTest, LargeBodiesArePreparedOnALaneOfTheirOwn) {
  auto owner = make({.prepare_threads = 1, .large_body_bytes = 1000});
  // (blocked task's bytes, other task's bytes): large blocks small, small blocks large.
  for (const auto& [blocked, other] : {std::pair<size_t, size_t>{5000, 999}, {0, 1000}}) {
    std::mutex mu;
    std::condition_variable changed;
    bool started = false, release = false, other_ran = false;
    std::thread::id blocked_on, other_on;
    Admission& admission = *owner;
    ASSERT_FALSE(admission.offload(
        [&] {
          std::unique_lock lock(mu);
          blocked_on = std::this_thread::get_id();
          started = true;
          changed.notify_all();
          changed.wait(lock, [&] { return release; });
        },
        blocked));
    std::unique_lock lock(mu);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return started; }));
    ASSERT_FALSE(admission.offload(
        [&] {
          std::lock_guard inner(mu);
          other_on = std::this_thread::get_id();
          other_ran = true;
          changed.notify_all();
        },
        other));
    EXPECT_TRUE(changed.wait_for(lock, std::chrono::seconds(30), [&] { return other_ran; }))
        << "a task of " << other << " bytes waited behind one of " << blocked;
    EXPECT_NE(blocked_on, other_on);
    release = true;
    changed.notify_all();
    lock.unlock();
    admission.stop();  // the blocked task ends before `mu` goes
    owner = make({.prepare_threads = 1, .large_body_bytes = 1000});
  }
}

}  // namespace
}  // namespace tandem::router
