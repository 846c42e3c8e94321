// llama3 rope scaling reaches the kernels the same way from an HF config
// (llama3 parameters) and from a GGUF (per-pair rope_freqs factors).
#include <cmath>
#include <filesystem>

#include "gtest/gtest.h"
#include "kernels/rope_frequencies.h"
#include "server/engine/model_runner.h"
#include "server/model/synth.h"
#include "server/model/weights.h"
#include "tests/test_paths.h"

namespace tandem::engine {
namespace {

class RopeParamsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  model::ModelWeightsPtr synth(model::SynthOptions::Format format, const std::string& shape) {
    model::SynthOptions opts;
    opts.out = dir_ + (format == model::SynthOptions::Format::kGguf ? "/m.gguf" : "/hf");
    opts.format = format;
    opts.shape = model::parseShape(shape).value();
    opts.seed = 7;
    EXPECT_TRUE(model::writeSynthModel(opts).ok());
    auto weights = model::ModelWeights::load(opts.out);
    EXPECT_TRUE(weights.ok()) << weights.status();
    return weights.ok() ? std::move(*weights) : nullptr;
  }

  std::string dir_;
};

TEST_F(RopeParamsTest, Llama3ScalingGivesTheSameFrequenciesFromHfAndGguf) {
  const std::string scaled = "dim=64,layers=1,heads=4,kv_heads=2,ffn=64,vocab=64,rope_scaling=llama3";
  auto hf = synth(model::SynthOptions::Format::kHf, scaled);
  auto gguf = synth(model::SynthOptions::Format::kGguf, scaled);
  auto plain = synth(model::SynthOptions::Format::kHf, "dim=64,layers=1,heads=4,kv_heads=2,ffn=64,vocab=64");
  ASSERT_TRUE(hf && gguf && plain);
  ASSERT_EQ(gguf->config().rope_scaling, model::RopeScaling::kFreqFactors);

  const auto from_hf = kernels::ropeInverseFrequencies(ropeParamsFor(hf->config()));
  const auto from_gguf = kernels::ropeInverseFrequencies(ropeParamsFor(gguf->config()));
  const auto unscaled = kernels::ropeInverseFrequencies(ropeParamsFor(plain->config()));
  ASSERT_EQ(from_hf.size(), 8u);
  ASSERT_EQ(from_gguf.size(), 8u);
  int scaled_pairs = 0;
  for (size_t i = 0; i < from_hf.size(); ++i) {
    EXPECT_NEAR(from_gguf[i], from_hf[i], 1e-6 * from_hf[i]) << "pair " << i;
    if (std::abs(from_hf[i] - unscaled[i]) > 1e-3 * unscaled[i]) ++scaled_pairs;
  }
  // head_dim 16: the two lowest frequencies fall in llama3's scaled bands.
  EXPECT_EQ(scaled_pairs, 2);
}

}  // namespace
}  // namespace tandem::engine
