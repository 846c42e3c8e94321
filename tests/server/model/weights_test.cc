#include "server/model/weights.h"

#include <cstring>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/model/tensor_layout.h"
#include "tests/test_paths.h"

namespace tandem::model {
namespace {

class ModelWeightsTest : public ::testing::Test {};

// the bytes of one row of an f32 tensor.
std::string_view row(const TensorView& t, int64_t r) {
  size_t row_bytes = t.bytes / static_cast<size_t>(t.shape[0]);
  return {static_cast<const char*>(t.data) + r * row_bytes, row_bytes};
}

TEST_F(ModelWeightsTest, LoadsStoriesFromGgufAndHfWithTheSameConfig) {
  auto gguf = ModelWeights::load(tandem::testing::storiesGguf());
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  auto hf = ModelWeights::load(tandem::testing::storiesHfDir());
  ASSERT_TRUE(hf.ok()) << hf.status();
  const ModelConfig& g = (*gguf)->config();
  const ModelConfig& h = (*hf)->config();
  EXPECT_EQ((*gguf)->format(), ModelFormat::kGguf);
  EXPECT_EQ((*hf)->format(), ModelFormat::kHfDir);
  EXPECT_EQ(g.architecture, "llama");
  EXPECT_EQ(h.architecture, "llama");
  EXPECT_EQ(g.hidden_size, 64);
  EXPECT_EQ(g.intermediate_size, 172);
  EXPECT_EQ(g.num_layers, 5);
  EXPECT_EQ(g.num_heads, 8);
  EXPECT_EQ(g.num_kv_heads, 4);
  EXPECT_EQ(g.head_dim, 8);
  EXPECT_EQ(g.vocab_size, 512);
  EXPECT_EQ(g.max_position_embeddings, 512);
  for (const ModelConfig* c : {&g, &h}) {
    EXPECT_EQ(c->hidden_size, 64);
    EXPECT_EQ(c->vocab_size, 512);
    EXPECT_EQ(c->bos_token_id, 1);
    EXPECT_EQ(c->eos_token_ids, std::vector<int>{2});
  }
  EXPECT_EQ(g.intermediate_size, h.intermediate_size);
  EXPECT_EQ(g.num_layers, h.num_layers);
  EXPECT_EQ(g.num_heads, h.num_heads);
  EXPECT_EQ(g.num_kv_heads, h.num_kv_heads);
  EXPECT_EQ(g.head_dim, h.head_dim);
  EXPECT_EQ(g.max_position_embeddings, h.max_position_embeddings);
  EXPECT_EQ(g.rms_norm_eps, h.rms_norm_eps);
  EXPECT_EQ(g.rope_theta, h.rope_theta);
  EXPECT_EQ(g.rope_scaling, h.rope_scaling);
  EXPECT_EQ(g.attention_bias, h.attention_bias);
  EXPECT_EQ(g.qk_norm, h.qk_norm);
  EXPECT_EQ(g.rope_style, RopeStyle::kInterleaved);
  EXPECT_EQ(h.rope_style, RopeStyle::kHalf);
  // llama2.c's converter writes output.weight as a copy of the embeddings, so
  // the GGUF is formally untied while the HF config ties them.
  EXPECT_FALSE(g.tie_word_embeddings);
  EXPECT_TRUE(h.tie_word_embeddings);
  EXPECT_EQ((*hf)->find("lm_head.weight"), nullptr);
  const TensorView* out = (*gguf)->find("lm_head.weight");
  const TensorView* emb = (*hf)->find("model.embed_tokens.weight");
  ASSERT_NE(out, nullptr);
  ASSERT_NE(emb, nullptr);
  ASSERT_EQ(out->bytes, emb->bytes);
  EXPECT_EQ(std::memcmp(out->data, emb->data, out->bytes), 0);
}

TEST_F(ModelWeightsTest, StoriesGgufAndHfHoldTheSameWeightsUpToTheRopePermutation) {
  auto gguf = ModelWeights::load(tandem::testing::storiesGguf());
  auto hf = ModelWeights::load(tandem::testing::storiesHfDir());
  ASSERT_TRUE(gguf.ok() && hf.ok());
  const ModelConfig& c = (*hf)->config();
  const int hd = c.head_dim;
  int compared = 0;
  for (const auto& [name, h] : (*hf)->tensors()) {
    const TensorView* g = (*gguf)->find(name);
    ASSERT_NE(g, nullptr) << name;
    ASSERT_EQ(g->shape, h.shape) << name;
    ASSERT_EQ(g->dtype, h.dtype) << name;
    ASSERT_EQ(g->bytes, h.bytes) << name;
    bool is_qk = name.find("q_proj.weight") != std::string::npos ||
                 name.find("k_proj.weight") != std::string::npos;
    if (!is_qk) {
      EXPECT_EQ(std::memcmp(g->data, h.data, h.bytes), 0) << name;
    } else {
      // per head: hf row i (i < hd/2) is gguf row 2i; hf row hd/2+i is gguf row 2i+1.
      for (int64_t head = 0; head < h.shape[0] / hd; ++head) {
        for (int i = 0; i < hd / 2; ++i) {
          int64_t base = head * hd;
          EXPECT_EQ(row(h, base + i), row(*g, base + 2 * i)) << name << " head " << head;
          EXPECT_EQ(row(h, base + hd / 2 + i), row(*g, base + 2 * i + 1)) << name;
        }
      }
      // and the un-permuted layout differs, so the check above is not vacuous.
      EXPECT_NE(std::memcmp(g->data, h.data, h.bytes), 0) << name;
    }
    ++compared;
  }
  EXPECT_EQ(compared, 1 + 5 * 9 + 1);
}

TEST_F(ModelWeightsTest, KeepsTensorsInTheFileMapping) {
  auto gguf = ModelWeights::load(tandem::testing::storiesGguf());
  ASSERT_TRUE(gguf.ok());
  const auto& file = (*gguf)->gguf()->file();
  for (const auto& [name, t] : (*gguf)->tensors()) {
    auto p = static_cast<const uint8_t*>(t.data);
    EXPECT_GE(p, file->data()) << name;
    EXPECT_LE(p + t.bytes, file->data() + file->size()) << name;
  }
  // 48 f32 tensors of 1 + 5 * 9 + 2 names; every weight is 4 bytes.
  EXPECT_EQ((*gguf)->tensors().size(), 48u);
  EXPECT_EQ((*gguf)->totalBytes(), 4u * static_cast<uint64_t>((*gguf)->config().parameterCount()));
}

TEST_F(ModelWeightsTest, ParameterCountMatchesTheStoredTensors) {
  for (const std::string& path : {tandem::testing::storiesGguf(), tandem::testing::storiesHfDir()}) {
    auto w = ModelWeights::load(path);
    ASSERT_TRUE(w.ok());
    int64_t stored = 0;
    for (const auto& [name, t] : (*w)->tensors()) stored += t.numel();
    EXPECT_EQ((*w)->config().parameterCount(), stored) << path;
  }
}

TEST_F(ModelWeightsTest, DescribesTheModelForInspect) {
  auto hf = ModelWeights::load(tandem::testing::storiesHfDir());
  ASSERT_TRUE(hf.ok());
  std::string d = describeModel(**hf);
  EXPECT_NE(d.find("architecture: llama"), std::string::npos) << d;
  EXPECT_NE(d.find("format: hf"), std::string::npos) << d;
  EXPECT_NE(d.find("tensors: 47 (f32: 47)"), std::string::npos) << d;
  EXPECT_NE(d.find("tokenizer.json: present"), std::string::npos) << d;
  EXPECT_NE(d.find("chat_template: absent"), std::string::npos) << d;
  auto gguf = ModelWeights::load(tandem::testing::storiesGguf());
  ASSERT_TRUE(gguf.ok());
  d = describeModel(**gguf);
  EXPECT_NE(d.find("format: gguf"), std::string::npos) << d;
  EXPECT_NE(d.find("tokenizer.ggml.model: llama, vocab 512"), std::string::npos) << d;
  EXPECT_NE(d.find("rope_style: interleaved"), std::string::npos) << d;
}

}  // namespace
}  // namespace tandem::model
