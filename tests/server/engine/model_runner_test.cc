// The model runner reproduces llama.cpp's greedy continuations of
// stories260K token for token: from the GGUF and the HF directory, with 1
// and 2 threads, with whole and chunked prefill, an F32 and an F16 KV cache
// (llama.cpp made the oracle with its default F16 one), one sequence at a
// time and all eight batched together.
#include "server/engine/model_runner.h"

#include <algorithm>
#include <tuple>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "tests/stories_oracle.h"
#include "tests/test_paths.h"

namespace tandem::engine {
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

// (model path, threads, prefill chunk size (0 = whole prompt), KV dtype)
using RunnerParam = std::tuple<std::string, int, int, DType>;

class ModelRunnerTest : public ::testing::TestWithParam<RunnerParam> {
 protected:
  void SetUp() override {
    const auto& [path, threads, chunk, kv_dtype] = GetParam();
    auto weights = model::ModelWeights::load(path == "gguf" ? testing::storiesGguf()
                                                            : testing::storiesHfDir());
    ASSERT_TRUE(weights.ok()) << weights.status();
    weights_ = std::move(*weights);
    auto backend = kernels::cpu::CpuBackend::create({.num_threads = threads});
    ASSERT_TRUE(backend.ok()) << backend.status();
    backend_ = std::move(*backend);
    auto runner =
        ModelRunner::create(*weights_, *backend_, kNumSeqs * kBlocksPerSeq, kBlockSize, nullptr, kv_dtype);
    ASSERT_TRUE(runner.ok()) << runner.status();
    runner_ = std::move(*runner);
    ASSERT_EQ(runner_->kvLayout().dtype, kv_dtype);
    chunk_ = chunk;
    oracle_ = testing::storiesOracle();
    ASSERT_EQ(oracle_.size(), static_cast<size_t>(kNumSeqs));
  }

  // the prefill of every sequence in `seqs` as chunks; one batch per round,
  // holding the next chunk of each sequence that has prompt left.
  std::vector<Batch> prefillBatches(const std::vector<int>& seqs) const {
    std::vector<Batch> batches;
    for (int start = 0;; start += (chunk_ == 0 ? 1 << 30 : chunk_)) {
      Batch b;
      for (int s : seqs) {
        const std::vector<int32_t>& p = oracle_[s].prompt_ids;
        if (start >= static_cast<int>(p.size())) continue;
        const int end = chunk_ == 0 ? static_cast<int>(p.size())
                                    : std::min<int>(p.size(), start + chunk_);
        b.seqs.push_back({static_cast<generation::SeqId>(s), {p.begin() + start, p.begin() + end}, start,
                          blocksOf(s), end == static_cast<int>(p.size())});
      }
      if (b.seqs.empty()) break;
      batches.push_back(std::move(b));
    }
    return batches;
  }

  // greedy-decodes the sequences in `seqs` together and checks every token.
  void expectOracle(const std::vector<int>& seqs) {
    const int vocab = runner_->config().vocab_size;
    std::vector<std::vector<int32_t>> generated(kNumSeqs);
    std::vector<float> logits;
    for (const Batch& b : prefillBatches(seqs)) {
      ASSERT_TRUE(runner_->forward(b, &logits).ok());
      int row = 0;
      for (const SequenceChunk& c : b.seqs) {
        if (c.needs_logits) generated[c.seq_id].push_back(argmax(&logits[row++ * vocab], vocab));
      }
    }
    const size_t want = oracle_[seqs[0]].completion_ids.size();
    while (generated[seqs[0]].size() < want) {
      Batch b;
      for (int s : seqs) {
        const int pos = static_cast<int>(oracle_[s].prompt_ids.size() + generated[s].size()) - 1;
        b.seqs.push_back({static_cast<generation::SeqId>(s), {generated[s].back()}, pos, blocksOf(s), true});
      }
      ASSERT_TRUE(runner_->forward(b, &logits).ok());
      for (size_t i = 0; i < seqs.size(); ++i) {
        generated[seqs[i]].push_back(argmax(&logits[i * vocab], vocab));
      }
    }
    for (int s : seqs) EXPECT_EQ(generated[s], oracle_[s].completion_ids) << "prompt " << s;
  }

  model::ModelWeightsPtr weights_;
  kernels::cpu::CpuBackendPtr backend_;
  ModelRunnerPtr runner_;
  int chunk_ = 0;
  std::vector<testing::OracleCase> oracle_;
};

TEST_P(ModelRunnerTest, ReproducesGreedyOracleOneSequenceAtATime) {
  for (int s = 0; s < kNumSeqs; ++s) expectOracle({s});
}

TEST_P(ModelRunnerTest, ReproducesGreedyOracleWithAllSequencesBatched) {
  std::vector<int> all(kNumSeqs);
  for (int s = 0; s < kNumSeqs; ++s) all[s] = s;
  expectOracle(all);
}

INSTANTIATE_TEST_SUITE_P(
    Stories, ModelRunnerTest,
    ::testing::Combine(::testing::Values("gguf", "hf"), ::testing::Values(1, 2),
                       ::testing::Values(0, 7), ::testing::Values(DType::kF32, DType::kF16)),
    [](const ::testing::TestParamInfo<RunnerParam>& info) {
      return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) +
             "threads_" +
             (std::get<2>(info.param) == 0 ? std::string("whole")
                                           : "chunk" + std::to_string(std::get<2>(info.param))) +
             "_kv" + std::string(dtypeName(std::get<3>(info.param)));
    });

// all_logits: row i of a chunk is position i's logits, the same as the last
// token's of the prefix ending there computed alone; a chunk beside it
// keeps its own one row, after them.
TEST(ModelRunnerAllLogitsTest, EveryTokensRowIsItsPrefixsLastTokenLogits) {
  auto weights = model::ModelWeights::load(testing::storiesGguf());
  ASSERT_TRUE(weights.ok()) << weights.status();
  auto backend = kernels::cpu::CpuBackend::create({.num_threads = 1});
  ASSERT_TRUE(backend.ok());
  auto runner = ModelRunner::create(**weights, **backend, 3 * kBlocksPerSeq, kBlockSize);
  ASSERT_TRUE(runner.ok()) << runner.status();
  const std::vector<testing::OracleCase> oracle = testing::storiesOracle();
  const std::vector<int32_t>& prompt = oracle[0].prompt_ids;
  const std::vector<int32_t>& other = oracle[1].prompt_ids;
  const int vocab = (*runner)->config().vocab_size;
  const int n = static_cast<int>(prompt.size());

  std::vector<float> all;
  Batch batch{{{0, prompt, 0, blocksOf(0), true, /*all_logits=*/true},
               {1, other, 0, blocksOf(1), true}}};
  ASSERT_EQ(batch.numLogitRows(), n + 1);
  ASSERT_TRUE((*runner)->forward(batch, &all).ok());
  ASSERT_EQ(all.size(), static_cast<size_t>(n + 1) * vocab);

  const auto expectRow = [&](const float* got, const std::vector<float>& want, int i) {
    for (int v = 0; v < vocab; ++v) ASSERT_NEAR(got[v], want[v], 1e-4f) << "row " << i << " token " << v;
  };
  std::vector<float> alone;
  for (int i = 0; i < n; ++i) {
    const std::vector<int32_t> prefix(prompt.begin(), prompt.begin() + i + 1);
    ASSERT_TRUE((*runner)->forward(Batch{{{2, prefix, 0, blocksOf(2), true}}}, &alone).ok());
    ASSERT_EQ(alone.size(), static_cast<size_t>(vocab));
    expectRow(&all[static_cast<size_t>(i) * vocab], alone, i);
  }
  ASSERT_TRUE((*runner)->forward(Batch{{{2, other, 0, blocksOf(2), true}}}, &alone).ok());
  expectRow(&all[static_cast<size_t>(n) * vocab], alone, n);
}

TEST(ModelRunnerValidationTest, RejectsBadTokensAndShortBlockTables) {
  auto weights = model::ModelWeights::load(testing::storiesGguf());
  ASSERT_TRUE(weights.ok()) << weights.status();
  auto backend = kernels::cpu::CpuBackend::create({.num_threads = 1});
  ASSERT_TRUE(backend.ok());
  auto runner = ModelRunner::create(**weights, **backend, 4, kBlockSize);
  ASSERT_TRUE(runner.ok()) << runner.status();
  std::vector<float> logits;
  Batch bad_token{{{1, {1, 100000}, 0, {0}, true}}};
  EXPECT_EQ((*runner)->forward(bad_token, &logits).code(), absl::StatusCode::kInvalidArgument);
  Batch short_table{{{1, std::vector<int32_t>(20, 5), 0, {0}, true}}};
  EXPECT_EQ((*runner)->forward(short_table, &logits).code(), absl::StatusCode::kInvalidArgument);
  // a KV cache of an element type attention cannot read
  const auto q8_kv = ModelRunner::create(**weights, **backend, 4, kBlockSize, nullptr, DType::kQ8_0);
  EXPECT_EQ(q8_kv.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(q8_kv.status().message().find("only f32, f16 and bf16"), std::string::npos) << q8_kv.status();
  // an F16 cache: half the bytes a block
  const auto f16_kv = ModelRunner::create(**weights, **backend, 4, kBlockSize, nullptr, DType::kF16);
  ASSERT_TRUE(f16_kv.ok()) << f16_kv.status();
  EXPECT_EQ(2 * (*f16_kv)->kvLayout().blockBytes(), (*runner)->kvLayout().blockBytes());
  Batch bad_block{{{1, {1, 2}, 0, {4}, true}}};
  EXPECT_EQ((*runner)->forward(bad_block, &logits).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ModelRunner::create(**weights, **backend, 0, kBlockSize).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*runner)->kvLayout().blockBytes(),
            static_cast<size_t>(kBlockSize) * 4 * 8 * 2 * 5 * sizeof(float));
}

}  // namespace
}  // namespace tandem::engine
