// Runs strings through a grammar byte by byte (a vocabulary of the 256
// single bytes), for the parser and schema compiler tests.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "text/grammar/grammar_automaton.h"
#include "text/grammar/grammar_parser.h"
#include "text/grammar/token_vocabulary.h"

namespace tandem::grammar::testing {

inline TokenVocabularyPtr byteVocabulary() {
  std::vector<std::string> bytes(257);
  for (int b = 0; b < 256; ++b) bytes[b] = std::string(1, static_cast<char>(b));
  return TokenVocabulary::build(std::move(bytes), {}, {256});
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
