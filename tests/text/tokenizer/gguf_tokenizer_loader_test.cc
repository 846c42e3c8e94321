// GGUF "gpt2" vocabularies: the Llama 3 and Qwen3 vocabularies written into
// a GGUF the way llama.cpp's converter does, then checked against the same
// llama.cpp vectors as their tokenizer.json.
#include "text/tokenizer/gguf_tokenizer_loader.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "formats/gguf_file.h"
#include "nlohmann/json.hpp"
#include "tests/test_paths.h"
#include "tests/text/tokenizer/vocab_test_cases.h"

namespace tandem::tokenizer {
namespace {

using testing::readAll;
using testing::readVocabCases;
using testing::VocabCase;

// writes a tensor-less GGUF v3 with string, string-array, int-array and
// scalar metadata.
class GgufWriter {
 public:
  void string(const std::string& key, const std::string& value) {
    header(key, 8);
    str(value);
  }
  void u32(const std::string& key, uint32_t value) {
    header(key, 4);
    raw(value);
  }
  void boolean(const std::string& key, bool value) {
    header(key, 7);
    raw(static_cast<uint8_t>(value));
  }
  void strings(const std::string& key, const std::vector<std::string>& values) {
    header(key, 9);
    raw(uint32_t{8});
    raw(static_cast<uint64_t>(values.size()));
    for (const auto& v : values) str(v);
  }
  void ints(const std::string& key, const std::vector<int32_t>& values) {
    header(key, 9);
    raw(uint32_t{5});
    raw(static_cast<uint64_t>(values.size()));
    for (int32_t v : values) raw(v);
  }
  void save(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    out.write("GGUF", 4);
    uint32_t version = 3;
    uint64_t tensors = 0;
    out.write(reinterpret_cast<const char*>(&version), 4);
    out.write(reinterpret_cast<const char*>(&tensors), 8);
    out.write(reinterpret_cast<const char*>(&count_), 8);
    out << body_;
  }

 private:
  template <typename T>
  void raw(T v) {
    body_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  void str(const std::string& s) {
    raw(static_cast<uint64_t>(s.size()));
    body_ += s;
  }
  void header(const std::string& key, uint32_t type) {
    str(key);
    raw(type);
    ++count_;
  }
  std::string body_;
  uint64_t count_ = 0;
};

class GgufTokenizerLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = tandem::testing::makeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // the vocabulary of fetched/<name>/tokenizer.json as a GGUF "gpt2" vocab.
  std::string convert(const std::string& name, const std::string& pre, std::optional<int> bos) {
    auto j = nlohmann::json::parse(readAll(tandem::testing::fetchedDataDir() + "/" + name +
                                           "/tokenizer.json"));
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    for (const auto& [token, id] : j["model"]["vocab"].items()) {
      size_t i = id.get<size_t>();
      if (i >= tokens.size()) tokens.resize(i + 1), types.resize(i + 1, 1);
      tokens[i] = token;
    }
    for (const auto& t : j["added_tokens"]) {
      size_t i = t["id"].get<size_t>();
      if (i >= tokens.size()) tokens.resize(i + 1), types.resize(i + 1, 1);
      tokens[i] = t["content"];
      types[i] = t["special"].get<bool>() ? 3 : 4;
    }
    std::vector<std::string> merges;
    for (const auto& m : j["model"]["merges"]) {
      merges.push_back(m.is_string() ? m.get<std::string>()
                                     : m[0].get<std::string>() + " " + m[1].get<std::string>());
    }
    GgufWriter w;
    w.string("general.architecture", "llama");
    w.string("tokenizer.ggml.model", "gpt2");
    w.string("tokenizer.ggml.pre", pre);
    w.strings("tokenizer.ggml.tokens", tokens);
    w.ints("tokenizer.ggml.token_type", types);
    w.strings("tokenizer.ggml.merges", merges);
    if (bos) w.u32("tokenizer.ggml.bos_token_id", *bos);
    w.boolean("tokenizer.ggml.add_bos_token", bos.has_value());
    std::string path = dir_ + "/" + name + ".gguf";
    w.save(path);
    return path;
  }

  TokenizerPtr load(const std::string& path) {
    auto gguf = model::GgufFile::open(path);
    EXPECT_TRUE(gguf.ok()) << gguf.status();
    if (!gguf.ok()) return nullptr;
    auto tok = loadGgufTokenizer(**gguf);
    EXPECT_TRUE(tok.ok()) << tok.status();
    return tok.ok() ? std::move(*tok) : nullptr;
  }

  void expectVectors(const Tokenizer& tok, const std::string& vocab) {
    std::vector<VocabCase> cases =
        readVocabCases(tandem::testing::testDataDir() + "/tokenizers/ggml-vocab-" + vocab + ".gguf");
    ASSERT_EQ(cases.size(), 47u);
    for (const VocabCase& c : cases) {
      EXPECT_EQ(tok.encode(c.text, false), c.ids) << "input: \"" << c.text << "\"";
      EXPECT_EQ(tok.decode(c.ids, false), c.text);
    }
  }

  std::string dir_;
};

TEST_F(GgufTokenizerLoaderTest, Llama3GgufVocabularyMatchesEveryLlamaCppVector) {
  TokenizerPtr tok = load(convert("llama3", "llama-bpe", 128000));
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->kind(), "bpe-byte-level");
  expectVectors(*tok, "llama-bpe");
  EXPECT_EQ(tok->encode("Hello world", true)[0], 128000);
  EXPECT_EQ(tok->encode("<|eot_id|>", false), std::vector<TokenId>{128009});
  EXPECT_TRUE(tok->isSpecial(128009));
}

TEST_F(GgufTokenizerLoaderTest, Qwen2GgufVocabularyMatchesEveryLlamaCppVector) {
  TokenizerPtr tok = load(convert("qwen3", "qwen2", std::nullopt));
  ASSERT_NE(tok, nullptr);
  expectVectors(*tok, "qwen2");
  EXPECT_EQ(tok->encode("<|im_start|>", true), std::vector<TokenId>{151644});
}

TEST_F(GgufTokenizerLoaderTest, PicksTheSplitRegexFromThePreTokenizerName) {
  EXPECT_EQ(splitPatternForPre("llama-bpe"), splitPatternForPre("llama3"));
  EXPECT_NE(splitPatternForPre("qwen2"), splitPatternForPre("llama3"));
  EXPECT_EQ(splitPatternForPre("default"), splitPatternForPre("gpt2"));
  EXPECT_EQ(splitPatternForPre("no-such-pre"), std::nullopt);
}

TEST_F(GgufTokenizerLoaderTest, RejectsAnUnknownTokenizerModel) {
  GgufWriter w;
  w.string("tokenizer.ggml.model", "bert");
  w.strings("tokenizer.ggml.tokens", {"a", "b"});
  w.save(dir_ + "/bert.gguf");
  auto gguf = model::GgufFile::open(dir_ + "/bert.gguf");
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  auto tok = loadGgufTokenizer(**gguf);
  ASSERT_FALSE(tok.ok());
  EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(tok.status().message().find("bert"), std::string::npos) << tok.status();
}

TEST_F(GgufTokenizerLoaderTest, RejectsAGgufWithoutAVocabulary) {
  GgufWriter w;
  w.string("general.architecture", "llama");
  w.save(dir_ + "/bare.gguf");
  auto tok = Tokenizer::load(dir_ + "/bare.gguf");
  ASSERT_FALSE(tok.ok());
  EXPECT_NE(tok.status().message().find("tokenizer.ggml.model"), std::string::npos) << tok.status();
}

}  // namespace
}  // namespace tandem::tokenizer
