// A grammar's pushdown recognizer, determinized lazily over bytes, with the
// token masks of its states cached.
//
// A matcher's configuration is a set of stacks (as llama.cpp's grammar
// stacks): each stack is the positions to return to, topped by the byte set
// to match next. Stacks are hash-consed nodes (position, parent node), so a
// stack is one id and stacks share their bottoms; a *state* is an interned
// sorted set of stack ids plus "the text so far is complete". step(state,
// byte) is memoized in a 256-entry row per state, so after warm-up a byte
// costs one array read, and a state's token mask — the tokens whose bytes
// lead to a live state — is computed once by one walk of the vocabulary's
// token trie (a dead branch skips its whole subtree) and then cached.
//
// Memory is bounded: when the states, stacks and masks exceed `max_bytes`,
// trim() drops them all and starts a new epoch; state ids from an earlier
// epoch are void (TokenMatcher replays its tokens into the new one).
// Not thread-safe: one thread (the engine's) uses an automaton at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "text/grammar/grammar.h"
#include "text/grammar/token_mask.h"
#include "text/grammar/token_vocabulary.h"

namespace tandem::grammar {

struct AutomatonStats {
  int64_t states = 0;
  int64_t stacks = 0;
  int64_t masks_computed = 0;
  int64_t mask_hits = 0;
  int64_t trims = 0;
  size_t bytes = 0;
};

class GrammarAutomaton {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr size_t kDefaultMaxBytes = size_t{256} << 20;

  GrammarAutomaton(Grammar grammar, TokenVocabularyPtr vocabulary,
                   size_t max_bytes = kDefaultMaxBytes);

  const TokenVocabulary& vocabulary() const { return *vocab_; }

  // the state before any text.
  int32_t initialState();
  // the state after `byte`, or kDead when no sentence continues with it.
  int32_t step(int32_t state, uint8_t byte) {
    const int32_t* row = states_[state].next.get();
    if (row != nullptr && row[byte] != kUnknown) return row[byte];
    return computeStep(state, byte);
  }
  // the state after token `id`'s bytes; kDead for a token that is never
  // allowed (special, empty, end-of-sequence) or leaves the grammar.
  int32_t stepToken(int32_t state, int32_t id);
  // the text that led to `state` is a complete sentence.
  bool accepting(int32_t state) const { return states_[state].accepting; }
  // some byte continues the text.
  bool canContinue(int32_t state) const { return !states_[state].stacks.empty(); }
  // the tokens allowed in `state`: those stepToken leaves alive, plus the
  // end-of-sequence tokens when accepting — or when no token is (a
  // vocabulary that cannot spell what the grammar needs ends the text).
  // valid until the next trim().
  const TokenMask& mask(int32_t state);
  // the mask of a matcher that consumed an end-of-sequence token.
  const TokenMask& endedMask() const { return ended_mask_; }

  // drops every state when over the memory bound; true when it did (the
  // epoch changed).
  bool trim();
  uint64_t epoch() const { return epoch_; }
  AutomatonStats stats() const;

 private:
  static constexpr int32_t kUnknown = -2;

  struct Node {
    uint32_t pos;
    int32_t parent;  // -1: the bottom
  };
  struct State {
    std::vector<int32_t> stacks;  // sorted node ids
    bool accepting = false;
    std::unique_ptr<int32_t[]> next;  // 256 entries, kUnknown until computed
    std::unique_ptr<TokenMask> mask;
  };

  int32_t computeStep(int32_t state, uint8_t byte);
  // puts position `pos` over stack `parent` and expands rule references
  // until each resulting stack's top is a byte set.
  void expand(uint32_t pos, int32_t parent);
  int32_t internNode(uint32_t pos, int32_t parent);
  int32_t internState();
  void reset();

  const Grammar grammar_;
  const TokenVocabularyPtr vocab_;
  const size_t max_bytes_;
  TokenMask ended_mask_;

  std::vector<Node> nodes_;
  absl::flat_hash_map<uint64_t, int32_t> node_ids_;
  std::vector<State> states_;
  absl::flat_hash_map<std::vector<int32_t>, int32_t> state_ids_;
  int32_t initial_ = kUnknown;
  uint64_t epoch_ = 0;
  size_t bytes_ = 0;
  int64_t masks_computed_ = 0;
  int64_t mask_hits_ = 0;
  int64_t trims_ = 0;

  // scratch of computeStep / mask.
  std::vector<int32_t> out_;
  bool out_accepting_ = false;
  absl::flat_hash_set<uint64_t> visited_;
  std::vector<int32_t> walk_;
};

}  // namespace tandem::grammar
