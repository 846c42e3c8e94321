// The whole engine (scheduler + KV cache + model runner + sampler) on the
// real stories260K model: llama.cpp's greedy tokens under continuous
// batching with chunked prefill and prefix caching, prefix reuse, and
// preemption under memory pressure.
#include "server/engine/engine_assembly.h"

#include <map>
#include <tuple>

#include "generation/request_limits.h"
#include "gtest/gtest.h"
#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem::engine {
namespace {

using testing::storiesOracle;

generation::SamplingParams greedy(int max_tokens) {
  generation::SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = max_tokens;
  p.ignore_eos = true;
  return p;
}

struct Result {
  std::vector<int32_t> tokens;
  int cached_tokens = 0;
  generation::FinishReason finish = generation::FinishReason::kNone;
};

// runs every request to completion and returns each one's output by id.
std::map<generation::SeqId, Result> runAll(Engine& eng) {
  std::map<generation::SeqId, Result> results;
  for (int steps = 0; eng.hasUnfinished() && steps < 100000; ++steps) {
    for (const generation::TokenOutput& out : eng.step()) {
      Result& r = results[out.id];
      r.tokens.push_back(out.token);
      r.cached_tokens = out.num_cached_tokens;
      r.finish = out.finish_reason;
    }
  }
  return results;
}

std::string modelPath(const std::string& format) {
  return format == "gguf" ? testing::storiesGguf() : testing::storiesHfDir();
}

// (format, threads)
class LocalEngineOracleTest : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(LocalEngineOracleTest, EightConcurrentPromptsMatchLlamaCppWithChunkedPrefill) {
  const auto& [format, threads] = GetParam();
  EngineAssemblyOptions opts;
  opts.num_threads = threads;
  opts.chunk_size = 7;
  opts.max_num_batched_tokens = 24;  // forces prefill chunks to share steps with decodes
  opts.enable_prefix_caching = true;
  auto local = EngineAssembly::create(modelPath(format), opts);
  ASSERT_TRUE(local.ok()) << local.status();
  const auto& oracle = storiesOracle();
  for (size_t i = 0; i < oracle.size(); ++i) {
    ASSERT_TRUE((*local)->engine().addRequest(i, oracle[i].prompt_ids, greedy(48)).ok());
  }
  auto results = runAll((*local)->engine());
  ASSERT_EQ(results.size(), oracle.size());
  for (size_t i = 0; i < oracle.size(); ++i) {
    EXPECT_EQ(results[i].tokens, oracle[i].completion_ids) << "prompt " << i;
    EXPECT_EQ(results[i].finish, generation::FinishReason::kLength);
  }
}

INSTANTIATE_TEST_SUITE_P(FormatsAndThreads, LocalEngineOracleTest,
                         ::testing::Combine(::testing::Values("gguf", "hf"), ::testing::Values(1, 2)));

class LocalEngineTest : public ::testing::Test {
 protected:
  static EngineAssemblyPtr make(EngineAssemblyOptions opts) {
    auto local = EngineAssembly::create(testing::storiesGguf(), opts);
    EXPECT_TRUE(local.ok()) << local.status();
    return local.ok() ? std::move(*local) : nullptr;
  }
};

TEST_F(LocalEngineTest, SecondRequestReusesTheSharedPrefixAndProducesIdenticalTokens) {
  const auto& oracle = storiesOracle();
  // a 53-token prompt: case 0's prompt followed by its own continuation.
  std::vector<int32_t> prompt = oracle[0].prompt_ids;
  prompt.insert(prompt.end(), oracle[0].completion_ids.begin(), oracle[0].completion_ids.end());

  auto cold = make({.num_threads = 1, .enable_prefix_caching = false});
  ASSERT_TRUE(cold->engine().addRequest(1, prompt, greedy(16)).ok());
  const Result expected = runAll(cold->engine())[1];

  auto warm = make({.num_threads = 1});
  ASSERT_TRUE(warm->engine().addRequest(1, prompt, greedy(16)).ok());
  const Result first = runAll(warm->engine())[1];
  ASSERT_TRUE(warm->engine().addRequest(2, prompt, greedy(16)).ok());
  const Result second = runAll(warm->engine())[2];

  EXPECT_EQ(first.cached_tokens, 0);
  // whole 16-token blocks, leaving the last prompt token to compute: 48 of 53.
  EXPECT_EQ(second.cached_tokens, 48);
  EXPECT_EQ(first.tokens, expected.tokens);
  EXPECT_EQ(second.tokens, expected.tokens);
}

TEST_F(LocalEngineTest, ThirtyTwoPromptsUnderMemoryPressureMatchRunningAlone) {
  const auto& oracle = storiesOracle();
  // 32 distinct prompts: each oracle prompt, extended by 0..3 of its own tokens.
  std::vector<std::vector<int32_t>> prompts;
  for (int v = 0; v < 4; ++v) {
    for (const auto& c : oracle) {
      std::vector<int32_t> p = c.prompt_ids;
      p.insert(p.end(), c.completion_ids.begin(), c.completion_ids.begin() + v);
      prompts.push_back(p);
    }
  }
  std::vector<std::vector<int32_t>> alone;
  auto solo = make({.num_threads = 2});
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(solo->engine().addRequest(i, prompts[i], greedy(40)).ok());
    alone.push_back(runAll(solo->engine())[i].tokens);
  }

  // each sequence needs up to 4 blocks of 16 (prompt <= 15 tokens + 40 new);
  // 12 blocks hold 3 of the 32 at once, so the scheduler must queue and preempt.
  kvcache::KvLayout layout{.num_layers = 5, .num_kv_heads = 4, .head_dim = 8, .block_size = 16};
  auto tight = make({.num_threads = 2, .kv_budget_bytes = 12 * layout.blockBytes()});
  ASSERT_EQ(tight->numBlocks(), 12);
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE(tight->engine().addRequest(i, prompts[i], greedy(40)).ok());
  }
  auto results = runAll(tight->engine());
  ASSERT_EQ(results.size(), prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(results[i].tokens, alone[i]) << "prompt " << i;
    EXPECT_EQ(results[i].finish, generation::FinishReason::kLength);
  }
  EXPECT_GT(tight->engine().scheduler().numPreemptions(), 0);
}

// the engine reports its limits; the rule (generation::checkRequest) refuses
// against them what the engine would assert on.
TEST_F(LocalEngineTest, ReportsTheLimitsTheRuleChecksRequestsAgainst) {
  auto local = make({.num_threads = 1});
  Engine& eng = local->engine();
  const generation::RequestLimits limits = local->limits();
  EXPECT_EQ(limits.max_model_len, local->maxModelLen());
  EXPECT_EQ(limits.vocab_size, 512);
  EXPECT_EQ(limits.max_kv_tokens, int64_t{local->numBlocks()} * 16);
  const auto refused = [&](std::vector<int32_t> prompt, const generation::SamplingParams& params) {
    return generation::checkRequest(limits, prompt, params).code() ==
           absl::StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(refused({}, greedy(4)));
  EXPECT_TRUE(refused(std::vector<int32_t>(local->maxModelLen() + 1, 5), greedy(4)));
  EXPECT_TRUE(refused({1, 2}, greedy(0)));
  generation::SamplingParams hot = greedy(4);
  hot.temperature = -1.0f;
  EXPECT_TRUE(refused({1, 2}, hot));
  hot.temperature = 1.0f;
  hot.top_p = 1.5f;
  EXPECT_TRUE(refused({1, 2}, hot));
  EXPECT_TRUE(refused({1, 512}, greedy(4)));

  // a huge max_tokens is clipped by the context: the request ends with "length"
  // when prompt plus output fill the context.
  ASSERT_TRUE(generation::checkRequest(limits, std::vector<int32_t>{1, 403}, greedy(1 << 30)).ok());
  ASSERT_TRUE(eng.addRequest(6, {1, 403}, greedy(1 << 30)).ok());
  auto results = runAll(eng);
  EXPECT_EQ(results[6].finish, generation::FinishReason::kLength);
  EXPECT_EQ(static_cast<int>(results[6].tokens.size()), local->maxModelLen() - 2);
  EXPECT_FALSE(eng.hasUnfinished());
}

}  // namespace
}  // namespace tandem::engine
