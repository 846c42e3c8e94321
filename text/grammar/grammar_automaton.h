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
// trim() drops them all and starts a new epoch; the states of the tracked
// slots (each TokenMatcher's) are carried over, so a matcher never replays
// its output (which made a token's work grow with the output's length).
// Work is bounded too, whatever the grammar: one byte step expands at most
// `expansions_per_step` stack nodes (an ambiguous grammar, such as nested
// bounded repetitions, can need more stacks with every byte: the byte that
// would exceed it is refused, as if the grammar had no sentence there), and
// one state's mask computes at most `mask_work` node expansions (the rest
// of the vocabulary is then refused for that state). The defaults are far
// above what JSON grammars need (tens of stacks a state, ~1e4 expansions a
// mask); stats() counts when they bite.
//
// Budget: every state knows its distance, an upper bound on the fewest
// tokens that complete a sentence from it (completionCosts(): per node, the
// cost of the rest of its alternative plus its parent's, so a state costs
// O(stacks) once, when interned). maskWithin() removes the tokens after
// which no sentence can be completed within the tokens left.
// Not thread-safe: one thread (the engine's) uses an automaton at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "text/grammar/grammar.h"
#include "text/grammar/grammar_costs.h"
#include "text/grammar/token_mask.h"
#include "text/grammar/token_vocabulary.h"

namespace tandem::grammar {

struct AutomatonStats {
  int64_t states = 0;
  int64_t stacks = 0;
  int64_t masks_computed = 0;
  int64_t mask_hits = 0;
  int64_t trims = 0;
  // byte steps refused for needing over kMaxExpansionsPerStep expansions,
  // masks cut short at kMaxMaskWork.
  int64_t step_overflows = 0;
  int64_t mask_overflows = 0;
  // stack nodes expanded by every step so far (the automaton's work).
  int64_t expansions = 0;
  size_t bytes = 0;
};


struct AutomatonLimits {
  // states, stacks and masks kept before trim() drops them.
  size_t max_bytes = size_t{256} << 20;
  // stack nodes one byte step may expand (and so stacks a state may hold):
  // a step costs ~100 ns a node, so at most a few ms; JSON grammars need
  // tens, a 16384-word alternative (kMaxRuleAlternatives) 16384.
  int expansions_per_step = 1 << 16;
  // node expansions one mask computation may make (its walk of the token
  // trie steps once per live trie node): bounds a token's cold cost to
  // ~0.5 s whatever the grammar; a JSON schema's masks take ~1e4.
  int64_t mask_work = int64_t{1} << 22;
};

class GrammarAutomaton {
 public:
  static constexpr int32_t kDead = -1;
  static constexpr size_t kDefaultMaxBytes = AutomatonLimits{}.max_bytes;
  static constexpr int kMaxExpansionsPerStep = AutomatonLimits{}.expansions_per_step;
  static constexpr int64_t kMaxMaskWork = AutomatonLimits{}.mask_work;
  // no budget: the tokens left are not counted.
  static constexpr int64_t kUnlimited = INT64_MAX;

  GrammarAutomaton(Grammar grammar, TokenVocabularyPtr vocabulary, AutomatonLimits limits = {});
  GrammarAutomaton(const GrammarAutomaton&) = delete;
  GrammarAutomaton& operator=(const GrammarAutomaton&) = delete;

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
  // an upper bound on the fewest tokens that take `state` to a complete
  // sentence (0 when accepting), achievable: some allowed token leads to a
  // state one nearer. kInfiniteCost (grammar_costs.h) when no completion is
  // known (a grammar that cannot finish from here, or a vocabulary that
  // lacks the single-byte tokens the completion needs).
  uint32_t distance(int32_t state) const { return states_[state].distance; }
  // mask(state) when at most `tokens_left` (>= 1) tokens may still be
  // generated, this one included: without the tokens whose next state is
  // farther than tokens_left - 1 from a sentence. While distance(state) <=
  // tokens_left this keeps a completion within the budget reachable (some
  // token always remains, one step nearer); when the budget is already
  // short it allows only tokens that come nearer. With an infinite
  // distance, mask(state). Returns mask(state) itself or `scratch`, filled.
  // Cost: O(1) while the budget is above every allowed token's next
  // distance, else one copy of the mask plus O(tokens removed).
  const TokenMask& maskWithin(int32_t state, int64_t tokens_left, TokenMask& scratch);

  // `slot` holds a state id that trim() keeps valid (rewrites into the new
  // epoch) until untrack(slot); the caller owns the slot.
  void track(int32_t* slot) { tracked_.push_back(slot); }
  void untrack(int32_t* slot);
  // drops every state when over the memory bound, but the tracked slots'
  // (re-made in the new epoch, at a cost in their stacks' nodes); true when
  // it did (the epoch changed).
  bool trim();
  uint64_t epoch() const { return epoch_; }
  AutomatonStats stats() const;

 private:
  static constexpr int32_t kUnknown = -2;

  struct Node {
    uint32_t pos;
    int32_t parent;  // -1: the bottom
    // the cost of completing this stack: the rest of pos's alternative,
    // then the parent's.
    uint32_t distance;
  };
  // a state's allowed tokens by the distance of their next state, for
  // maskWithin: only those nearer or farther than the state itself.
  struct TokensByDistance {
    std::vector<int32_t> nearer;
    std::vector<std::pair<uint32_t, int32_t>> farther;  // farthest first
  };
  struct State {
    std::vector<int32_t> stacks;  // sorted node ids
    bool accepting = false;
    uint32_t distance = 0;
    std::unique_ptr<int32_t[]> next;  // 256 entries, kUnknown until computed
    std::unique_ptr<TokenMask> mask;
    std::unique_ptr<TokensByDistance> by_distance;  // with mask
  };

  int32_t computeStep(int32_t state, uint8_t byte);
  // puts position `pos` over stack `parent` and expands rule references
  // until each resulting stack's top is a byte set (iteratively: a chain of
  // references or of returns is as long as a grammar or an output makes
  // it); false when that needs over kMaxExpansionsPerStep expansions.
  bool expand(uint32_t pos, int32_t parent);
  int32_t internNode(uint32_t pos, int32_t parent);
  int32_t internState();
  void reset();

  // the tracked states as (position, parent index) nodes, parents first,
  // and each state's stacks as indices into them.
  struct SavedState {
    std::vector<std::pair<uint32_t, int32_t>> nodes;
    std::vector<std::vector<int32_t>> stacks;
    std::vector<bool> accepting;
  };
  SavedState saveTracked(absl::flat_hash_map<int32_t, int32_t>& index) const;
  void restoreTracked(const SavedState& saved, const absl::flat_hash_map<int32_t, int32_t>& index);

  const Grammar grammar_;
  const TokenVocabularyPtr vocab_;
  const AutomatonLimits limits_;
  // per element position: the cost of the rest of its alternative.
  const std::vector<uint32_t> completion_;
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
  int64_t step_overflows_ = 0;
  int64_t mask_overflows_ = 0;
  int64_t expansions_ = 0;
  std::vector<int32_t*> tracked_;
  // expansions the mask being computed may still make (kUnlimited outside
  // mask()).
  int64_t work_left_ = kUnlimited;

  // scratch of computeStep / mask.
  std::vector<int32_t> out_;
  bool out_accepting_ = false;
  absl::flat_hash_set<uint64_t> visited_;
  std::vector<std::pair<uint32_t, int32_t>> pending_;
  std::vector<int32_t> walk_;
};

}  // namespace tandem::grammar
