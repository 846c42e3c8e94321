#include "server/engine/scheduler.h"

#include <map>
#include <numeric>
#include <vector>

#include "gtest/gtest.h"
#include "kvcache/kv_cache_manager.h"

namespace tandem::engine {
namespace {

constexpr int kBlockSize = 4;
constexpr int32_t kVocab = 50;

std::vector<int32_t> iota(int n, int32_t first = 1) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// a deterministic stand-in for the model that also checks the paged KV
// bookkeeping: it writes each computed token into its cache slot through the
// block table, and derives the next token from the whole context read back
// from the cache. a wrong block table or a stale prefix hit changes the
// output, so "same tokens as a solo run" proves the cache was right.
class FakeModel {
 public:
  explicit FakeModel(int num_blocks) : slots_(num_blocks * kBlockSize, -1) {}

  std::vector<int32_t> forward(const Batch& batch) {
    std::vector<int32_t> sampled;
    for (const SequenceChunk& c : batch.seqs) {
      const int end = c.start_pos + static_cast<int>(c.tokens.size());
      EXPECT_EQ(c.block_table.size(), static_cast<size_t>((end + kBlockSize - 1) / kBlockSize));
      for (size_t i = 0; i < c.tokens.size(); ++i) {
        slots_[slot(c, c.start_pos + static_cast<int>(i))] = c.tokens[i];
      }
      if (!c.needs_logits) continue;
      uint64_t h = 1469598103934665603ULL;
      for (int pos = 0; pos < end; ++pos) {
        h = (h ^ static_cast<uint64_t>(slots_[slot(c, pos)] + 1)) * 1099511628211ULL;
      }
      sampled.push_back(static_cast<int32_t>(h % kVocab));
    }
    return sampled;
  }

 private:
  static int slot(const SequenceChunk& c, int pos) {
    return c.block_table[pos / kBlockSize] * kBlockSize + pos % kBlockSize;
  }
  std::vector<int32_t> slots_;
};

generation::SamplingParams maxTokens(int n) {
  generation::SamplingParams p;
  p.temperature = 0.0f;
  p.max_tokens = n;
  return p;
}

class SchedulerTest : public ::testing::Test {
 protected:
  void init(int num_blocks, SchedulerConfig config) {
    kv_ = std::make_unique<kvcache::KvCacheManager>(num_blocks, kBlockSize);
    model_ = std::make_unique<FakeModel>(num_blocks);
    scheduler_ = std::make_unique<Scheduler>(std::move(config), *kv_);
  }

  static SchedulerConfig config(int budget, int chunk, int max_seqs = 64) {
    SchedulerConfig c;
    c.max_num_batched_tokens = budget;
    c.chunk_size = chunk;
    c.max_num_seqs = max_seqs;
    c.max_model_len = 256;
    return c;
  }

  // one engine step: schedule, run the fake model, report its tokens.
  Batch step() {
    Batch batch = scheduler_->schedule();
    const auto sampled = model_->forward(batch);
    EXPECT_EQ(sampled.size(), static_cast<size_t>(batch.numLogitRows()));
    last_outputs_ = scheduler_->onStepResult(sampled);
    for (const RequestOutput& o : last_outputs_) {
      tokens_[o.id].push_back(o.token);
      if (o.finished()) finished_[o.id] = o;
    }
    return batch;
  }

  void runToCompletion(int max_steps = 10000) {
    for (int i = 0; i < max_steps && scheduler_->hasUnfinished(); ++i) step();
    ASSERT_FALSE(scheduler_->hasUnfinished());
  }

  // (start_pos, token count, needs_logits) of each chunk of a batch.
  struct Shape {
    generation::SeqId id;
    int start;
    int n;
    bool logits;
    bool operator==(const Shape&) const = default;
  };
  static std::vector<Shape> shape(const Batch& b) {
    std::vector<Shape> out;
    for (const auto& c : b.seqs) {
      out.push_back({c.seq_id, c.start_pos, static_cast<int>(c.tokens.size()), c.needs_logits});
    }
    return out;
  }

  std::unique_ptr<kvcache::KvCacheManager> kv_;
  std::unique_ptr<FakeModel> model_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<RequestOutput> last_outputs_;
  std::map<generation::SeqId, std::vector<int32_t>> tokens_;
  std::map<generation::SeqId, RequestOutput> finished_;
};

TEST_F(SchedulerTest, SplitsLongPromptIntoChunksOfSeven) {
  init(16, config(100, 7));
  ASSERT_TRUE(scheduler_->addRequest(1, iota(20), maxTokens(2)).ok());
  Batch b1 = step();
  EXPECT_EQ(shape(b1), (std::vector<Shape>{{1, 0, 7, false}}));
  EXPECT_EQ(b1.seqs[0].tokens, iota(7));
  EXPECT_EQ(b1.seqs[0].block_table, (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(last_outputs_.empty());
  Batch b2 = step();
  EXPECT_EQ(shape(b2), (std::vector<Shape>{{1, 7, 7, false}}));
  EXPECT_EQ(b2.seqs[0].tokens, iota(7, 8));
  EXPECT_EQ(b2.seqs[0].block_table, (std::vector<int32_t>{0, 1, 2, 3}));
  Batch b3 = step();
  EXPECT_EQ(shape(b3), (std::vector<Shape>{{1, 14, 6, true}}));
  EXPECT_EQ(b3.seqs[0].block_table, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  ASSERT_EQ(last_outputs_.size(), 1u);
  Batch b4 = step();
  EXPECT_EQ(shape(b4), (std::vector<Shape>{{1, 20, 1, true}}));
  EXPECT_EQ(b4.seqs[0].tokens, (std::vector<int32_t>{tokens_[1][0]}));
  EXPECT_EQ(finished_[1].finish_reason, generation::FinishReason::kLength);
  EXPECT_EQ(kv_->numFreeBlocks(), 16);
}

TEST_F(SchedulerTest, DecodesGoFirstAndPrefillsShareTheRestOfTheBudget) {
  init(32, config(10, 7));
  ASSERT_TRUE(scheduler_->addRequest(1, iota(3), maxTokens(10)).ok());
  ASSERT_TRUE(scheduler_->addRequest(2, iota(20, 100), maxTokens(10)).ok());
  ASSERT_TRUE(scheduler_->addRequest(3, iota(5, 200), maxTokens(10)).ok());
  EXPECT_EQ(shape(step()), (std::vector<Shape>{{1, 0, 3, true}, {2, 0, 7, false}}));
  EXPECT_EQ(shape(step()), (std::vector<Shape>{{1, 3, 1, true}, {2, 7, 7, false}, {3, 0, 2, false}}));
  EXPECT_EQ(shape(step()), (std::vector<Shape>{{1, 4, 1, true}, {2, 14, 6, true}, {3, 2, 3, true}}));
  EXPECT_EQ(shape(step()), (std::vector<Shape>{{1, 5, 1, true}, {2, 20, 1, true}, {3, 5, 1, true}}));
  EXPECT_EQ(scheduler_->numRunning(), 3);
}

TEST_F(SchedulerTest, AdmitsWaitingRequestsFirstComeFirstServed) {
  init(32, config(100, 64, /*max_seqs=*/2));
  for (generation::SeqId id : {5, 3, 9}) {
    ASSERT_TRUE(scheduler_->addRequest(id, iota(4, static_cast<int32_t>(id)), maxTokens(2)).ok());
  }
  EXPECT_EQ(shape(step()), (std::vector<Shape>{{5, 0, 4, true}, {3, 0, 4, true}}));
  EXPECT_EQ(scheduler_->numWaiting(), 1);
  EXPECT_EQ(shape(step()), (std::vector<Shape>{{5, 4, 1, true}, {3, 4, 1, true}}));
  EXPECT_EQ(finished_.size(), 2u);
  EXPECT_EQ(shape(step()), (std::vector<Shape>{{9, 0, 4, true}}));
}

TEST_F(SchedulerTest, PrefixHitsSkipComputationAndAreCounted) {
  init(16, config(100, 64));
  ASSERT_TRUE(scheduler_->addRequest(1, iota(10), maxTokens(1)).ok());
  Batch first = step();
  EXPECT_EQ(finished_[1].num_cached_tokens, 0);
  std::vector<int32_t> prompt = iota(8);
  prompt.push_back(40);
  prompt.push_back(41);
  prompt.push_back(42);
  ASSERT_TRUE(scheduler_->addRequest(2, prompt, maxTokens(1)).ok());
  Batch second = step();
  EXPECT_EQ(shape(second), (std::vector<Shape>{{2, 8, 3, true}}));
  EXPECT_EQ(second.seqs[0].tokens, (std::vector<int32_t>{40, 41, 42}));
  // the first two blocks are request 1's, found in the prefix cache.
  EXPECT_EQ(second.seqs[0].block_table[0], first.seqs[0].block_table[0]);
  EXPECT_EQ(second.seqs[0].block_table[1], first.seqs[0].block_table[1]);
  EXPECT_EQ(finished_[2].num_cached_tokens, 8);
  EXPECT_EQ(finished_[2].num_prompt_tokens, 11);
}

TEST_F(SchedulerTest, PreemptsMostRecentlyAdmittedAndResumesItsOutput) {
  init(4, config(100, 64));
  ASSERT_TRUE(scheduler_->addRequest(1, iota(6), maxTokens(10)).ok());
  ASSERT_TRUE(scheduler_->addRequest(2, iota(6, 100), maxTokens(10)).ok());
  EXPECT_EQ(shape(step()), (std::vector<Shape>{{1, 0, 6, true}, {2, 0, 6, true}}));
  step();
  step();
  EXPECT_EQ(kv_->numFreeBlocks(), 0);
  // both need a third block for position 8: request 2, admitted last, yields.
  EXPECT_EQ(shape(step()), (std::vector<Shape>{{1, 8, 1, true}}));
  EXPECT_EQ(scheduler_->numPreemptions(), 1);
  EXPECT_EQ(scheduler_->numWaiting(), 1);
  const Request* preempted = scheduler_->findRequest(2);
  ASSERT_NE(preempted, nullptr);
  EXPECT_EQ(preempted->state, RequestState::kWaiting);
  EXPECT_EQ(preempted->numOutputTokens(), 3);
  EXPECT_EQ(preempted->num_computed_tokens, 0);
  runToCompletion();
  EXPECT_EQ(tokens_[2].size(), 10u);
  EXPECT_EQ(finished_[2].num_output_tokens, 10);
}

TEST_F(SchedulerTest, EveryRequestCompletesUnderCachePressureAsIfAlone) {
  constexpr int kRequests = 32;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int> max_tokens;
  for (int i = 0; i < kRequests; ++i) {
    // shared 8-token system prefix for half the requests, so hits and
    // evictions interleave with preemption.
    std::vector<int32_t> p = i % 2 == 0 ? iota(8, 1) : std::vector<int32_t>{};
    for (int j = 0; j < 3 + (i * 7) % 13; ++j) p.push_back((i * 31 + j * 17) % kVocab);
    prompts.push_back(p);
    max_tokens.push_back(4 + (i * 5) % 11);
  }
  // reference: each request alone in a roomy cache.
  std::map<generation::SeqId, std::vector<int32_t>> alone;
  for (int i = 0; i < kRequests; ++i) {
    init(64, config(64, 16));
    ASSERT_TRUE(scheduler_->addRequest(i, prompts[i], maxTokens(max_tokens[i])).ok());
    tokens_.clear();
    runToCompletion();
    alone[i] = tokens_[i];
  }
  // 12 blocks of 4 tokens: about two requests at a time.
  init(12, config(24, 7));
  tokens_.clear();
  finished_.clear();
  for (int i = 0; i < kRequests; ++i) {
    ASSERT_TRUE(scheduler_->addRequest(i, prompts[i], maxTokens(max_tokens[i])).ok());
  }
  runToCompletion();
  EXPECT_GT(scheduler_->numPreemptions(), 0);
  EXPECT_GT(kv_->prefixHitTokens(), 0);
  ASSERT_EQ(finished_.size(), static_cast<size_t>(kRequests));
  for (int i = 0; i < kRequests; ++i) {
    EXPECT_EQ(tokens_[i], alone[i]) << "request " << i;
    EXPECT_EQ(finished_[i].finish_reason, generation::FinishReason::kLength);
  }
  EXPECT_EQ(kv_->numFreeBlocks(), 12);
  EXPECT_EQ(kv_->blockPool().numUsed(), 0);
}

TEST_F(SchedulerTest, AbortFreesBlocksInAnyState) {
  init(8, config(100, 64));
  ASSERT_TRUE(scheduler_->addRequest(1, iota(10), maxTokens(5)).ok());
  ASSERT_TRUE(scheduler_->addRequest(2, iota(6, 50), maxTokens(5)).ok());
  ASSERT_TRUE(scheduler_->abort(2).ok());  // waiting.
  step();
  EXPECT_EQ(kv_->blockPool().numUsed(), 3);
  ASSERT_TRUE(scheduler_->abort(1).ok());  // running.
  EXPECT_EQ(kv_->blockPool().numUsed(), 0);
  EXPECT_FALSE(scheduler_->hasUnfinished());
  EXPECT_EQ(scheduler_->abort(1).code(), absl::StatusCode::kNotFound);
}

TEST_F(SchedulerTest, AbortDuringAStepSkipsItsRow) {
  init(8, config(100, 64));
  ASSERT_TRUE(scheduler_->addRequest(1, iota(3), maxTokens(5)).ok());
  ASSERT_TRUE(scheduler_->addRequest(2, iota(3, 9), maxTokens(5)).ok());
  Batch b = scheduler_->schedule();
  ASSERT_TRUE(scheduler_->abort(1).ok());
  const auto outputs = scheduler_->onStepResult(model_->forward(b));
  ASSERT_EQ(outputs.size(), 1u);
  EXPECT_EQ(outputs[0].id, 2u);
  EXPECT_EQ(kv_->blockPool().numUsed(), 1);
}

TEST_F(SchedulerTest, StopsOnStopTokenEosAndContextLength) {
  SchedulerConfig c = config(100, 64);
  c.eos_token_ids = {7};
  c.max_model_len = 12;
  init(16, c);
  // the fake model's first token for these prompts, learned from a dry run.
  ASSERT_TRUE(scheduler_->addRequest(1, iota(4), maxTokens(1)).ok());
  step();
  const int32_t first = tokens_[1][0];

  generation::SamplingParams stop = maxTokens(50);
  stop.stop_token_ids = {first};
  ASSERT_TRUE(scheduler_->addRequest(2, iota(4), stop).ok());
  step();
  EXPECT_EQ(finished_[2].finish_reason, generation::FinishReason::kStop);
  EXPECT_EQ(finished_[2].token, first);

  generation::SamplingParams long_run = maxTokens(50);
  long_run.ignore_eos = true;
  ASSERT_TRUE(scheduler_->addRequest(3, iota(4, 20), long_run).ok());
  runToCompletion();
  EXPECT_EQ(finished_[3].finish_reason, generation::FinishReason::kLength);
  EXPECT_EQ(finished_[3].num_output_tokens, 8);  // 4 prompt + 8 = max_model_len.
}

TEST_F(SchedulerTest, EosEndsGenerationUnlessIgnored) {
  SchedulerConfig c = config(100, 64);
  init(16, c);
  ASSERT_TRUE(scheduler_->addRequest(1, iota(4), maxTokens(1)).ok());
  step();
  c.eos_token_ids = {tokens_[1][0]};
  init(16, c);
  ASSERT_TRUE(scheduler_->addRequest(2, iota(4), maxTokens(5)).ok());
  generation::SamplingParams ignore = maxTokens(5);
  ignore.ignore_eos = true;
  ASSERT_TRUE(scheduler_->addRequest(3, iota(4), ignore).ok());
  runToCompletion();
  EXPECT_EQ(finished_[2].finish_reason, generation::FinishReason::kStop);
  EXPECT_EQ(finished_[2].num_output_tokens, 1);
  EXPECT_EQ(finished_[3].finish_reason, generation::FinishReason::kLength);
  EXPECT_EQ(finished_[3].num_output_tokens, 5);
}

TEST_F(SchedulerTest, RefusesAnIdInUse) {
  init(4, config(100, 64));
  ASSERT_TRUE(scheduler_->addRequest(1, iota(10), maxTokens(7)).ok());
  EXPECT_EQ(scheduler_->addRequest(1, iota(3), maxTokens(1)).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(scheduler_->numWaiting(), 1);
}

// the limits were checked before the engine (generation::checkRequest): a
// request past them is a caller's bug, and the scheduler stops there.
TEST_F(SchedulerTest, AssertsTheLimitsItIsGiven) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  init(4, config(100, 64));
  // 10 + 8 tokens store 17 of KV: 5 blocks of 4, the cache holds 4.
  EXPECT_DEATH((void)scheduler_->addRequest(1, iota(10), maxTokens(8)), "TANDEM_CHECK failed");
  EXPECT_DEATH((void)scheduler_->addRequest(2, {}, maxTokens(1)), "TANDEM_CHECK failed");
  EXPECT_DEATH((void)scheduler_->addRequest(3, iota(256), maxTokens(1)), "TANDEM_CHECK failed");
  EXPECT_TRUE(scheduler_->addRequest(1, iota(10), maxTokens(7)).ok());
}

}  // namespace
}  // namespace tandem::engine
