// The model runner, unchanged, on the hip backend running on the host
// emulator reproduces llama.cpp's greedy continuations of stories260K: two
// prompts prefilled in chunks of 7 tokens (prefix + chunk attention) and
// decoded together at wave 64, and a third prompt prefilled whole at wave 32.
// Every token of every step goes through the HIP kernels.
#include <algorithm>
#include <numeric>

#include "gtest/gtest.h"
#include "kernels/emu/runtime.h"
#include "kernels/hip/hip_backend.h"
#include "server/engine/model_runner.h"
#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem::kernels::hip {
namespace {

constexpr int kBlockSize = 16;
constexpr int kBlocksPerSeq = 8;
constexpr int kNumSeqs = 8;

int32_t argmax(const float* row, int n) {
  return static_cast<int32_t>(std::max_element(row, row + n) - row);
}

std::vector<int32_t> blocksOf(int seq) {
  std::vector<int32_t> table(kBlocksPerSeq);
  for (int b = 0; b < kBlocksPerSeq; ++b) table[b] = seq * kBlocksPerSeq + b;
  return table;
}

class HipModelRunnerTest : public ::testing::Test {
 protected:
  void start(int warp_size, DType kv_dtype = DType::kF32) {
    emu::setWarpSize(warp_size);
    auto weights = model::ModelWeights::load(testing::storiesGguf());
    ASSERT_TRUE(weights.ok()) << weights.status();
    weights_ = std::move(*weights);
    auto backend = HipBackend::create();
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
    auto runner =
        engine::ModelRunner::create(*weights_, *backend_, kNumSeqs * kBlocksPerSeq, kBlockSize, nullptr, kv_dtype);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
  }
  void TearDown() override {
    runner_.reset();
    backend_.reset();
  }

  // prefills (whole, or in chunks of `chunk`) and greedy-decodes `seqs`
  // together, checking every token against the oracle.
  void expectOracle(const std::vector<int>& seqs, int chunk) {
    const auto& oracle = testing::storiesOracle();
    const int vocab = runner_->config().vocab_size;
    std::vector<std::vector<int32_t>> generated(kNumSeqs);
    std::vector<float> logits;
    for (int begin = 0;; begin += chunk) {
      engine::Batch b;
      for (int s : seqs) {
        const std::vector<int32_t>& p = oracle[s].prompt_ids;
        if (begin >= static_cast<int>(p.size())) continue;
        const int end = std::min<int>(p.size(), begin + chunk);
        b.seqs.push_back({static_cast<generation::SeqId>(s),
                          {p.begin() + begin, p.begin() + end},
                          begin,
                          blocksOf(s),
                          end == static_cast<int>(p.size())});
      }
      if (b.seqs.empty()) break;
      ASSERT_TRUE(runner_->forward(b, &logits).ok());
      int row = 0;
      for (const engine::SequenceChunk& c : b.seqs) {
        if (c.needs_logits) generated[c.seq_id].push_back(argmax(&logits[row++ * vocab], vocab));
      }
    }
    const size_t want = oracle[seqs[0]].completion_ids.size();
    while (generated[seqs[0]].size() < want) {
      engine::Batch b;
      for (int s : seqs) {
        const int pos = static_cast<int>(oracle[s].prompt_ids.size() + generated[s].size()) - 1;
        b.seqs.push_back(
            {static_cast<generation::SeqId>(s), {generated[s].back()}, pos, blocksOf(s), true});
      }
      ASSERT_TRUE(runner_->forward(b, &logits).ok());
      for (size_t i = 0; i < seqs.size(); ++i) {
        generated[seqs[i]].push_back(argmax(&logits[i * vocab], vocab));
      }
    }
    for (int s : seqs) EXPECT_EQ(generated[s], oracle[s].completion_ids) << "prompt " << s;
  }

  model::ModelWeightsPtr weights_;
  HipBackendPtr backend_;
  engine::ModelRunnerPtr runner_;
};

TEST_F(HipModelRunnerTest, ReproducesGreedyOracleForTwoPromptsChunkedAndBatchedAtWave64) {
  start(64);
  expectOracle({0, 1}, 7);
}

TEST_F(HipModelRunnerTest, ReproducesGreedyOracleWithWholePrefillAtWave32) {
  start(32);
  expectOracle({2}, 1 << 20);
}

// an F16 KV cache (--kv-cache-dtype f16; llama.cpp made the oracle with one)
TEST_F(HipModelRunnerTest, ReproducesGreedyOracleWithAnF16KvCache) {
  start(64, DType::kF16);
  ASSERT_EQ(runner_->kvLayout().dtype, DType::kF16);
  expectOracle({3, 4}, 5);
}

// decode steps replayed from captured graphs (issue 38): the oracle still,
// every decode step after each shape's first one a replay, and the logits
// bit for bit those of the eager steps (attention is launched for the same
// context bucket either way).
TEST_F(HipModelRunnerTest, ReplaysDecodeStepsFromGraphsWithTheEagerStepsLogits) {
  start(32);
  runner_->enableStepGraphs(true);
  expectOracle({5, 6}, 1 << 20);
  EXPECT_GT(runner_->graphReplays(), 30);

  auto eager = engine::ModelRunner::create(*weights_, *backend_, kNumSeqs * kBlocksPerSeq,
                                           kBlockSize);
  ASSERT_TRUE(eager.ok()) << eager.status();
  // a 240-token prompt, then steps across the 256-position context bucket's
  // edge (a second graph from there)
  std::vector<int32_t> prompt(240);
  for (int i = 0; i < 240; ++i) prompt[i] = (i * 37 + 11) % runner_->config().vocab_size;
  std::vector<int32_t> table(20);  // 320 positions: the blocks of prompts 0-2
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> want, got;
  for (engine::ModelRunner* r : {eager->get(), runner_.get()}) {
    ASSERT_TRUE(r->forward(engine::Batch{{{0, prompt, 0, table, true}}}, &want).ok());
  }
  const int64_t replays = runner_->graphReplays();
  for (int pos = 240; pos < 270; ++pos) {
    const engine::Batch step{{{0, {static_cast<int32_t>(pos % 100)}, pos, table, true}}};
    ASSERT_TRUE((*eager)->forward(step, &want).ok());
    ASSERT_TRUE(runner_->forward(step, &got).ok());
    ASSERT_EQ(got, want) << "position " << pos;
  }
  // captured at 240 (bucket 256) and 256 (bucket 512), replayed otherwise
  EXPECT_EQ(runner_->graphReplays() - replays, 28);
}

}  // namespace
}  // namespace tandem::kernels::hip
