// Checks that two tokenizers give the same ids on every case of llama.cpp's
// tokenizer vectors (tests/data/tokenizers/ggml-vocab-*.inp), for the
// vocabulary converters' tests.
#pragma once

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_paths.h"
#include "tests/text/tokenizer/vocab_test_cases.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::model::testing {

// the inputs of every vendored vector file, so each vocabulary meets the
// texts written for the others too (emoji, CJK, runs of spaces).
inline std::vector<std::string> vectorTexts() {
  std::vector<std::string> texts;
  for (const char* name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-llama-bpe.gguf", "ggml-vocab-qwen2.gguf"}) {
    for (auto& c : tokenizer::testing::readVocabCases(tandem::testing::testDataDir() + "/tokenizers/" + name)) {
      texts.push_back(std::move(c.text));
    }
  }
  return texts;
}

// the number of texts on which `a` and `b` disagree (with and without the
// special tokens encode() adds); each disagreement is reported.
inline int countDifferences(const tokenizer::Tokenizer& a, const tokenizer::Tokenizer& b) {
  int differences = 0;
  for (const std::string& text : vectorTexts()) {
    for (bool add_special : {false, true}) {
      std::vector<tokenizer::TokenId> ia = a.encode(text, add_special), ib = b.encode(text, add_special);
      if (ia == ib) continue;
      ++differences;
      ADD_FAILURE() << "ids differ on \"" << text << "\" (add_special=" << add_special << ")";
    }
  }
  return differences;
}

}  // namespace tandem::model::testing
