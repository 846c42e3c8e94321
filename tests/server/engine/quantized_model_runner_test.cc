// A quantized model end to end through the model runner: synthetic q8_0 and
// Q4_K_M GGUF files, the cpu backend's quantized matmuls (integer dots for
// decode, dequantized panels for a long prefill) against the reference
// backend, which dequantizes every weight row exactly. The cpu path rounds
// each activation row to 8 bits per block (a relative error of about 0.4% of
// a block's largest value), so logits agree to a small fraction of their
// spread, not bit for bit.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/reference/reference_backend.h"
#include "server/engine/model_runner.h"
#include "server/model/synth.h"
#include "tests/test_paths.h"

namespace tandem::engine {
namespace {

constexpr int kBlockSize = 16;

class QuantizedModelRunnerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

// logits of `steps` greedy steps after a prompt of `prompt_len` tokens; the
// tokens fed are `feed` (the reference's choices), so both runs see the same
// inputs.
std::vector<std::vector<float>> run(ModelRunner& runner, const std::vector<int32_t>& prompt,
                                    const std::vector<int32_t>& feed) {
  std::vector<int32_t> table(8);
  for (int i = 0; i < 8; ++i) table[i] = i;
  std::vector<std::vector<float>> out;
  std::vector<float> logits;
  Batch b;
  b.seqs.push_back({generation::SeqId{0}, prompt, 0, table, true});
  EXPECT_TRUE(runner.forward(b, &logits).ok());
  out.push_back(logits);
  int pos = static_cast<int>(prompt.size());
  for (int32_t t : feed) {
    Batch d;
    d.seqs.push_back({generation::SeqId{0}, {t}, pos++, table, true});
    EXPECT_TRUE(runner.forward(d, &logits).ok());
    out.push_back(logits);
  }
  return out;
}

TEST_P(QuantizedModelRunnerTest, CpuMatchesTheDequantizedReference) {
  model::SynthOptions o;
  o.out = dir_ + "/m.gguf";
  o.format = model::SynthOptions::Format::kGguf;
  o.shape = *model::parseShape("dim=256,layers=2,heads=4,kv_heads=2,ffn=512,vocab=512");
  o.seed = 5;
  if (GetParam() == "q4_k_m") {
    o.q4_k_m = true;
  } else {
    o.dtype = DType::kQ8_0;
  }
  ASSERT_TRUE(model::writeSynthModel(o).ok());
  auto weights = model::ModelWeights::load(o.out);
  ASSERT_TRUE(weights.ok()) << weights.status();
  auto cpu = kernels::cpu::CpuBackend::create({.num_threads = 2});
  ASSERT_TRUE(cpu.ok());
  kernels::ReferenceBackend reference;
  auto cpu_runner = ModelRunner::create(**weights, **cpu, 8, kBlockSize);
  auto ref_runner = ModelRunner::create(**weights, reference, 8, kBlockSize);
  ASSERT_TRUE(cpu_runner.ok()) << cpu_runner.status();
  ASSERT_TRUE(ref_runner.ok()) << ref_runner.status();

  // 40 prompt tokens: past the integer path's 16 rows, so prefill takes the
  // dequantized-panel path; the decode steps take the integer dots.
  std::vector<int32_t> prompt(40);
  for (int i = 0; i < 40; ++i) prompt[i] = (i * 37 + 11) % 512;
  const std::vector<int32_t> feed = {5, 300, 77, 123, 9};
  const auto want = run(**ref_runner, prompt, feed);
  const auto got = run(**cpu_runner, prompt, feed);
  ASSERT_EQ(got.size(), want.size());
  for (size_t s = 0; s < want.size(); ++s) {
    ASSERT_EQ(got[s].size(), want[s].size());
    float lo = want[s][0], hi = want[s][0], max_diff = 0.0f;
    for (size_t i = 0; i < want[s].size(); ++i) {
      lo = std::min(lo, want[s][i]);
      hi = std::max(hi, want[s][i]);
      max_diff = std::max(max_diff, std::fabs(got[s][i] - want[s][i]));
    }
    // the prefill's last row goes through lm_head alone (the integer path)
    // like every decode step.
    const float tol = 0.03f * (hi - lo);
    EXPECT_LE(max_diff, tol) << "step " << s << ": logits span " << hi - lo;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedModelRunnerTest, ::testing::Values("q8_0", "q4_k_m"));

}  // namespace
}  // namespace tandem::engine
