// What the engine does with a request's grammar, for the grammar fuzzers:
// the grammar parsed and lowered (every input), then its automaton over the
// embedded model's vocabulary (stories260K, 512 tokens) takes a few tokens
// under a budget, as the engine samples them, each chosen from the mask by
// the input. Checks what the matcher promises: an allowed token is
// accepted, and with a budget at least the initial state's distance the
// walk cut at the budget is a whole sentence (unless a work bound cut the
// grammar: GrammarAutomaton's step and mask limits).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "text/grammar/grammar_parser.h"
#include "text/grammar/token_matcher.h"
#include "text/grammar/token_vocabulary.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::fuzz {

inline grammar::TokenVocabularyPtr storiesVocabulary() {
  static const grammar::TokenVocabularyPtr v = [] {
    auto tok = tokenizer::Tokenizer::fromHfDir(TANDEM_SOURCE_DIR "/models/stories260K/hf");
    if (!tok.ok() || !(*tok)->eosId()) __builtin_trap();
    return grammar::TokenVocabulary::fromTokenizer(**tok, {*(*tok)->eosId()});
  }();
  return v;
}

// a grammar this large is parsed and lowered but not walked: its automaton
// is built the same way, only slower (the fuzzer's per-input timeout).
inline constexpr size_t kMaxWalkedElements = 1 << 18;

// parses `text` and walks `budget` (1..64) tokens through it, choosing
// tokens with a generator seeded by `seed`.
inline void walkGrammar(std::string_view text, int budget, uint32_t seed) {
  absl::StatusOr<grammar::Grammar> g = grammar::parseGrammar(text);
  if (!g.ok()) {
    if (g.status().code() != absl::StatusCode::kInvalidArgument) __builtin_trap();
    return;
  }
  if (g->elements.size() > kMaxWalkedElements) return;
  const grammar::TokenVocabularyPtr vocab = storiesVocabulary();
  // small bounds, so that trims (carrying the matcher's state over) and
  // refused steps and cut masks happen too, and an input stays well within
  // the fuzzer's time limit under the sanitizers.
  const grammar::AutomatonLimits limits = {
      .max_bytes = 4 << 20, .expansions_per_step = 1 << 12, .mask_work = 1 << 18};
  auto automaton = std::make_shared<grammar::GrammarAutomaton>(std::move(*g), vocab, limits);
  grammar::TokenMatcher m(automaton);
  const bool promised = m.distance() <= static_cast<uint32_t>(budget);
  uint32_t rng = seed * 2654435761u + 1;
  int used = 0;
  bool ended = false;
  for (; used < budget && !m.isTerminated(); ++used) {
    // a few masks' worth of work in all (the walk's promise is then not
    // checked: it was not walked to the end)
    if (automaton->stats().expansions > 4 * limits.mask_work) return;
    const grammar::TokenMask& mask = m.allowedTokens(budget - used);
    const int count = mask.count();
    if (count == 0) __builtin_trap();  // never empty: EOS at the least
    rng = rng * 1664525u + 1013904223u;
    int pick = static_cast<int>((rng >> 8) % static_cast<uint32_t>(count));
    int32_t token = 0;
    for (; token < mask.numTokens(); ++token) {
      if (mask.test(token) && pick-- == 0) break;
    }
    if (!m.accept(token)) __builtin_trap();  // an allowed token is accepted
    if (vocab->isEos(token)) {
      ended = true;
      break;
    }
  }
  const grammar::AutomatonStats stats = automaton->stats();
  const bool cut = stats.step_overflows > 0 || stats.mask_overflows > 0;
  // the budget promise: cut at the budget, the text is a sentence.
  if (promised && !cut && !ended && used == budget && !m.isComplete()) __builtin_trap();
}

}  // namespace tandem::fuzz
