#include "server/model/synth.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/mapped_file.h"
#include "common/quant_blocks.h"
#include "gtest/gtest.h"
#include "server/model/weights.h"
#include "tests/test_paths.h"

namespace tandem::model {
namespace {

constexpr char kSmall[] = "dim=64,layers=2,heads=4,kv_heads=2,ffn=128,vocab=512";

class SynthTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  SynthOptions options(const std::string& name, SynthOptions::Format format, DType dtype,
                       uint64_t seed = 7) {
    SynthOptions o;
    o.out = dir_ + "/" + name + (format == SynthOptions::Format::kGguf ? ".gguf" : "");
    o.format = format;
    o.shape = *parseShape(kSmall);
    o.dtype = dtype;
    o.seed = seed;
    return o;
  }
  static std::string bytesOf(const std::string& path) { return *readFile(path); }

  std::string dir_;
};

TEST_F(SynthTest, ParsesShapeSpecs) {
  auto s = parseShape("dim=768,layers=12,heads=12,ffn=2048,vocab=32000,arch=qwen3");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->dim, 768);
  EXPECT_EQ(s->kv_heads, 12);
  EXPECT_EQ(s->arch, "qwen3");
  EXPECT_EQ(s->max_pos, 2048);
  EXPECT_FALSE(parseShape("dim=64,layers=2").ok());
  EXPECT_FALSE(parseShape("dim=x,layers=2,heads=4,ffn=8").ok());
  EXPECT_FALSE(parseShape("dim=64,layers=2,heads=4,ffn=8,bogus=1").ok());
  EXPECT_FALSE(parseShape("dim=64,layers=2,heads=4,ffn=8,arch=gpt2").ok());
}

TEST_F(SynthTest, RoundTripsEveryFormatAndDtype) {
  for (auto format : {SynthOptions::Format::kHf, SynthOptions::Format::kGguf}) {
    for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
      std::string name = std::string(format == SynthOptions::Format::kHf ? "hf-" : "gguf-") +
                         std::string(dtypeName(dtype));
      SynthOptions o = options(name, format, dtype);
      ASSERT_TRUE(writeSynthModel(o).ok()) << name;
      auto w = ModelWeights::load(o.out);
      ASSERT_TRUE(w.ok()) << name << ": " << w.status();
      const ModelConfig& c = (*w)->config();
      EXPECT_EQ(c.hidden_size, 64);
      EXPECT_EQ(c.num_layers, 2);
      EXPECT_EQ(c.num_heads, 4);
      EXPECT_EQ(c.num_kv_heads, 2);
      EXPECT_EQ(c.head_dim, 16);
      EXPECT_EQ(c.intermediate_size, 128);
      EXPECT_EQ(c.vocab_size, 512);
      EXPECT_EQ(c.max_position_embeddings, 2048);
      EXPECT_FALSE(c.tie_word_embeddings);
      EXPECT_EQ((*w)->tensors().size(), 1u + 2 * 9 + 2) << name;
      const TensorView* q = (*w)->find("model.layers.1.self_attn.q_proj.weight");
      ASSERT_NE(q, nullptr);
      EXPECT_EQ(q->dtype, dtype);
      EXPECT_EQ(q->shape, (std::vector<int64_t>{64, 64}));
      const TensorView* k = (*w)->find("model.layers.1.self_attn.k_proj.weight");
      EXPECT_EQ(k->shape, (std::vector<int64_t>{32, 64}));
      // norms are ones (f32 in GGUF whatever the dtype, as llama.cpp writes them).
      const TensorView* norm = (*w)->find("model.norm.weight");
      ASSERT_NE(norm, nullptr);
      if (norm->dtype == DType::kF32) {
        EXPECT_EQ(static_cast<const float*>(norm->data)[5], 1.0f);
      } else {
        EXPECT_EQ(static_cast<const uint16_t*>(norm->data)[5],
                  dtype == DType::kF16 ? f32ToF16(1.0f) : f32ToBf16(1.0f));
      }
      EXPECT_EQ((*w)->config().parameterCount(), 512 * 64 * 2 + 64 + 2 * (64 * 64 * 2 + 32 * 64 * 2 + 3 * 64 * 128 + 128));
    }
  }
}

TEST_F(SynthTest, SameSeedGivesIdenticalBytesAndAnotherSeedDiffers) {
  for (auto format : {SynthOptions::Format::kHf, SynthOptions::Format::kGguf}) {
    SynthOptions a = options("a", format, DType::kBF16, 1);
    SynthOptions b = options("b", format, DType::kBF16, 1);
    SynthOptions c = options("c", format, DType::kBF16, 2);
    ASSERT_TRUE(writeSynthModel(a).ok());
    ASSERT_TRUE(writeSynthModel(b).ok());
    ASSERT_TRUE(writeSynthModel(c).ok());
    std::string suffix = format == SynthOptions::Format::kHf ? "/model.safetensors" : "";
    EXPECT_EQ(bytesOf(a.out + suffix), bytesOf(b.out + suffix));
    EXPECT_NE(bytesOf(a.out + suffix), bytesOf(c.out + suffix));
  }
}

TEST_F(SynthTest, HfAndGgufOfOneSeedHoldTheSameModel) {
  SynthOptions h = options("same", SynthOptions::Format::kHf, DType::kF32);
  SynthOptions g = options("same", SynthOptions::Format::kGguf, DType::kF32);
  ASSERT_TRUE(writeSynthModel(h).ok());
  ASSERT_TRUE(writeSynthModel(g).ok());
  auto hw = ModelWeights::load(h.out);
  auto gw = ModelWeights::load(g.out);
  ASSERT_TRUE(hw.ok() && gw.ok());
  EXPECT_EQ((*gw)->config().rope_style, RopeStyle::kInterleaved);
  const int hd = 16;
  for (const auto& [name, t] : (*hw)->tensors()) {
    const TensorView* o = (*gw)->find(name);
    ASSERT_NE(o, nullptr) << name;
    ASSERT_EQ(o->bytes, t.bytes) << name;
    auto* a = static_cast<const float*>(t.data);
    auto* b = static_cast<const float*>(o->data);
    if (name.ends_with("q_proj.weight") || name.ends_with("k_proj.weight")) {
      for (int64_t r = 0; r < t.shape[0]; ++r) {
        int64_t head = r / hd, i = r % hd;
        int64_t gr = head * hd + (i < hd / 2 ? 2 * i : 2 * (i - hd / 2) + 1);
        EXPECT_EQ(std::memcmp(a + r * 64, b + gr * 64, 64 * 4), 0) << name << " row " << r;
      }
    } else {
      EXPECT_EQ(std::memcmp(a, b, t.bytes), 0) << name;
    }
  }
}

TEST_F(SynthTest, CopiesEveryTokenizerKeyFromAGgufVocabulary) {
  const std::string vocab = tandem::testing::testDataDir() + "/tokenizers/ggml-vocab-llama-spm.gguf";
  SynthOptions o = options("spm", SynthOptions::Format::kGguf, DType::kF16);
  o.shape.vocab = 0;  // take it from the tokenizer
  o.vocab_from = vocab;
  ASSERT_TRUE(writeSynthModel(o).ok());
  auto src = GgufFile::open(vocab);
  auto w = ModelWeights::load(o.out);
  ASSERT_TRUE(src.ok() && w.ok()) << w.status();
  EXPECT_EQ((*w)->config().vocab_size, 32000);
  EXPECT_EQ((*w)->config().bos_token_id, 1);
  const GgufFile& out = *(*w)->gguf();
  int copied = 0;
  for (const auto& [key, value] : (*src)->metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    const GgufValue* v = out.find(key);
    ASSERT_NE(v, nullptr) << key;
    EXPECT_EQ(v->type, value.type) << key;
    EXPECT_EQ(v->array.size(), value.array.size()) << key;
    EXPECT_EQ(v->scalar, value.scalar) << key;
    EXPECT_EQ(v->array, value.array) << key;
    ++copied;
  }
  EXPECT_EQ(copied, 10);
}

TEST_F(SynthTest, RejectsAVocabSmallerThanTheTokenizer) {
  SynthOptions o = options("small", SynthOptions::Format::kGguf, DType::kF32);
  o.vocab_from = tandem::testing::testDataDir() + "/tokenizers/ggml-vocab-llama-spm.gguf";
  auto s = writeSynthModel(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
}

TEST_F(SynthTest, CopiesTheHfTokenizerFiles) {
  SynthOptions o = options("hfvocab", SynthOptions::Format::kHf, DType::kF32);
  o.vocab_from = tandem::testing::storiesHfDir();
  ASSERT_TRUE(writeSynthModel(o).ok());
  EXPECT_EQ(bytesOf(o.out + "/tokenizer.json"), bytesOf(o.vocab_from + "/tokenizer.json"));
  EXPECT_TRUE(std::filesystem::exists(o.out + "/tokenizer_config.json"));
  auto w = ModelWeights::load(o.out);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ((*w)->config().bos_token_id, 1);
  EXPECT_EQ((*w)->config().eos_token_ids, std::vector<int>{2});
}

TEST_F(SynthTest, WritesLlama3RopeScalingThatBothLoadersRead) {
  // head_dim 16, theta 1e4: pairs 0-5 have wavelengths under 8192 / 4 (kept),
  // pair 7 over 8192 (divided by 8), pair 6 (2 pi 1000) in between.
  const double smooth = (8192.0 / (2 * M_PI * 1000.0) - 1.0) / 3.0;
  const float middle = static_cast<float>(1.0 / ((1.0 - smooth) / 8.0 + smooth));
  std::vector<float> factors;
  for (auto format : {SynthOptions::Format::kHf, SynthOptions::Format::kGguf}) {
    SynthOptions o = options("rope", format, DType::kF32);
    o.shape.rope_scaling = "llama3";
    ASSERT_TRUE(writeSynthModel(o).ok());
    auto w = ModelWeights::load(o.out);
    ASSERT_TRUE(w.ok()) << w.status();
    const ModelConfig& c = (*w)->config();
    ASSERT_EQ(c.rope_freq_factors.size(), 8u);
    EXPECT_EQ(c.rope_freq_factors[0], 1.0f);
    EXPECT_EQ(c.rope_freq_factors[5], 1.0f);
    EXPECT_NEAR(c.rope_freq_factors[6], middle, 1e-6f);
    EXPECT_EQ(c.rope_freq_factors[7], 8.0f);
    if (format == SynthOptions::Format::kHf) {
      EXPECT_EQ(c.rope_scaling, RopeScaling::kLlama3);
      EXPECT_EQ(c.rope_factor, 8.0f);
      EXPECT_EQ(c.rope_original_max_position, 8192);
      factors = c.rope_freq_factors;
    } else {
      EXPECT_EQ(c.rope_scaling, RopeScaling::kFreqFactors);
      EXPECT_EQ(c.rope_freq_factors, factors);  // the same floats, bit for bit
      EXPECT_NE((*w)->find("rope_freqs.weight"), nullptr);
    }
  }
}

TEST_F(SynthTest, RejectsLlama3RopeScalingForQwen) {
  auto shape = parseShape("dim=64,layers=1,heads=4,ffn=128,vocab=64,arch=qwen3,rope_scaling=llama3");
  ASSERT_TRUE(shape.ok()) << shape.status();
  SynthOptions o = options("qwen-rope", SynthOptions::Format::kGguf, DType::kF32);
  o.shape = *shape;
  EXPECT_EQ(writeSynthModel(o).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(parseShape("dim=64,layers=1,heads=4,ffn=128,rope_scaling=yarn").ok());
}

// q8_0 and llama.cpp's Q4_K_M mix: the dtypes of each tensor, and the
// dequantized values of each within its format's resolution of the f32
// synth of the same seed.
TEST_F(SynthTest, WritesQuantizedGgufThatDequantizesToTheF32Model) {
  const std::string shape = "dim=256,layers=8,heads=4,kv_heads=2,ffn=512,vocab=512";
  SynthOptions f = options("f32", SynthOptions::Format::kGguf, DType::kF32);
  f.shape = *parseShape(shape);
  SynthOptions q8 = options("q8", SynthOptions::Format::kGguf, DType::kQ8_0);
  q8.shape = f.shape;
  SynthOptions km = options("q4km", SynthOptions::Format::kGguf, DType::kF32);
  km.shape = f.shape;
  km.q4_k_m = true;
  for (const SynthOptions* o : {&f, &q8, &km}) ASSERT_TRUE(writeSynthModel(*o).ok()) << o->out;
  auto fw = ModelWeights::load(f.out);
  auto q8w = ModelWeights::load(q8.out);
  auto kmw = ModelWeights::load(km.out);
  ASSERT_TRUE(fw.ok() && q8w.ok() && kmw.ok());
  EXPECT_EQ(*(*q8w)->gguf()->getInt("general.file_type"), 7);
  EXPECT_EQ(*(*kmw)->gguf()->getInt("general.file_type"), 15);

  auto dtypeOf = [&](const ModelWeightsPtr& w, const std::string& name) {
    const TensorView* t = w->find(name);
    return t == nullptr ? DType::kI32 : t->dtype;
  };
  EXPECT_EQ(dtypeOf(*q8w, "model.layers.3.mlp.up_proj.weight"), DType::kQ8_0);
  EXPECT_EQ(dtypeOf(*q8w, "model.norm.weight"), DType::kF32);
  EXPECT_EQ(dtypeOf(*kmw, "lm_head.weight"), DType::kQ6_K);
  EXPECT_EQ(dtypeOf(*kmw, "model.embed_tokens.weight"), DType::kQ4_K);
  EXPECT_EQ(dtypeOf(*kmw, "model.layers.0.self_attn.q_proj.weight"), DType::kQ4_K);
  // use_more_bits(i, 8): layers 0 (first eighth), 7 (last eighth), 3 and 6
  // ((i - 1) % 3 == 2) get q6_k for attn_v and ffn_down.
  for (int i = 0; i < 8; ++i) {
    const DType want = (i == 0 || i == 3 || i == 6 || i == 7) ? DType::kQ6_K : DType::kQ4_K;
    const std::string p = "model.layers." + std::to_string(i) + ".";
    EXPECT_EQ(dtypeOf(*kmw, p + "self_attn.v_proj.weight"), want) << i;
    EXPECT_EQ(dtypeOf(*kmw, p + "mlp.down_proj.weight"), want) << i;
    EXPECT_EQ(dtypeOf(*kmw, p + "mlp.gate_proj.weight"), DType::kQ4_K) << i;
  }

  for (const ModelWeightsPtr* w : {&*q8w, &*kmw}) {
    for (const auto& [name, t] : (*fw)->tensors()) {
      const TensorView* q = (*w)->find(name);
      ASSERT_NE(q, nullptr) << name;
      ASSERT_EQ(q->shape, t.shape) << name;
      std::vector<float> y(t.numel());
      quant::dequantizeRow(q->dtype, q->data, y.data(), t.numel());
      const auto* x = static_cast<const float*>(t.data);
      // weights are uniform with std 0.02 (|x| <= 0.0347): a 4-bit step of
      // that range is ~0.005; 8 bits ~0.0003.
      const float tol = q->dtype == DType::kQ8_0 ? 0.0004f : q->dtype == DType::kF32 ? 0.0f : 0.006f;
      for (int64_t i = 0; i < t.numel(); ++i) {
        ASSERT_NEAR(y[i], x[i], tol) << name << " (" << dtypeName(q->dtype) << ") at " << i;
      }
    }
  }
}

TEST_F(SynthTest, RejectsQuantizedHfAndRowsThatAreNotWholeBlocks) {
  SynthOptions hf = options("hfq", SynthOptions::Format::kHf, DType::kQ8_0);
  EXPECT_EQ(writeSynthModel(hf).code(), absl::StatusCode::kInvalidArgument);
  SynthOptions g = options("odd", SynthOptions::Format::kGguf, DType::kQ4_K);  // dim 64
  const absl::Status s = writeSynthModel(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("block of 256"), std::string::npos) << s;
}

}  // namespace
}  // namespace tandem::model
