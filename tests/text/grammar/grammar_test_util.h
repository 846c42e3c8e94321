// Runs strings through a grammar byte by byte (a vocabulary of the 256
// single bytes), for the parser and schema compiler tests.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tests/test_paths.h"
#include "text/grammar/grammar_automaton.h"
#include "text/grammar/grammar_parser.h"
#include "text/grammar/token_vocabulary.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::grammar::testing {

inline TokenVocabularyPtr byteVocabulary() {
  std::vector<std::string> bytes(257);
  for (int b = 0; b < 256; ++b) bytes[b] = std::string(1, static_cast<char>(b));
  return TokenVocabulary::build(std::move(bytes), {}, {256});
}

// "stories260K" (vendored) or a tokenizer tests/fetch_test_data.sh fetched
// ("llama3", "qwen3").
inline absl::StatusOr<tokenizer::TokenizerPtr> loadTestTokenizer(const std::string& name) {
  const std::string path = name == "stories260K" ? tandem::testing::storiesHfDir()
                                                 : tandem::testing::fetchedDataDir() + "/" + name;
  return tokenizer::Tokenizer::load(path);
}

// the ids `mask` allows, `eos` left out (-1: none).
inline std::vector<int32_t> allowedIds(const TokenMask& mask, int32_t eos) {
  std::vector<int32_t> ids;
  for (int32_t id = 0; id < mask.numTokens(); ++id) {
    if (mask.test(id) && id != eos) ids.push_back(id);
  }
  return ids;
}

// the compiled grammar, over single bytes.
class ByteMatcher {
 public:
  explicit ByteMatcher(Grammar grammar)
      : automaton_(std::make_unique<GrammarAutomaton>(std::move(grammar), byteVocabulary())) {}

  // `text` is a whole sentence of the grammar.
  bool accepts(std::string_view text) {
    int32_t s = automaton_->initialState();
    for (char c : text) {
      s = automaton_->step(s, static_cast<uint8_t>(c));
      if (s == GrammarAutomaton::kDead) return false;
    }
    return automaton_->accepting(s);
  }
  // `text` can be continued into a sentence.
  bool isPrefix(std::string_view text) {
    int32_t s = automaton_->initialState();
    for (char c : text) {
      s = automaton_->step(s, static_cast<uint8_t>(c));
      if (s == GrammarAutomaton::kDead) return false;
    }
    return true;
  }

 private:
  std::unique_ptr<GrammarAutomaton> automaton_;
};

}  // namespace tandem::grammar::testing
