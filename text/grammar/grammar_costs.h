// The least cost of a sentence of each rule of a grammar, for a cost the
// caller gives to runs of bytes: with a cost of 1 per run it says which
// rules can match nothing (the lowering's left-recursion check); with the
// fewest tokens that spell a run it gives how far a matcher's state is from
// a complete sentence (the automaton's budget mask).
// Internal to text/grammar.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/functional/function_ref.h"
#include "text/grammar/grammar.h"
#include "text/grammar/token_vocabulary.h"

namespace tandem::grammar {

// "cannot be matched": a rule with no finite sentence, a run no token spells.
inline constexpr uint32_t kInfiniteCost = UINT32_MAX;

// a + b, kInfiniteCost when either is (or the sum overflows).
inline uint32_t addCosts(uint32_t a, uint32_t b) {
  return (a == kInfiniteCost || b == kInfiniteCost || a > kInfiniteCost - 1 - b) ? kInfiniteCost
                                                                                : a + b;
}

// for each rule of `grammar`, the least cost of one of its sentences, where
// an alternative costs the sum of its parts: each maximal run of byte
// elements (between rule references), starting at position p, costs
// run_cost(p), and a rule reference its rule's least cost. kInfiniteCost for
// a rule that derives no finite sentence at that cost.
//
// Knuth's generalization of Dijkstra's algorithm to grammars (rules are
// settled in order of cost; an alternative is ready once every rule it
// references is): O(E log E) time and O(E) memory for E elements, no
// recursion, whatever the grammar's shape. run_cost is called once per run.
std::vector<uint32_t> leastRuleCosts(const Grammar& grammar,
                                     absl::FunctionRef<uint32_t(uint32_t)> run_cost);

// per element position p of `grammar`: an upper bound on the fewest tokens
// of `vocab` that spell a completion of the rest of p's alternative (from p
// to its end), kInfiniteCost when none is found. A run of literal bytes
// (singleton byte sets) costs its fewest-token segmentation into candidate
// tokens of at most kMaxSegmentBytes bytes lying wholly inside the run; a
// wider byte set costs 1 when a single-byte token is in it (else
// kInfiniteCost); a rule reference its rule's least cost. Tokens spanning
// a run's edge (`{"` over "{" then a rule) are not counted, which is why
// it is an upper bound; and it is achievable: every cost is a real token
// sequence the grammar allows, its first token one step nearer.
// Cost: O(E * kMaxSegmentBytes) trie steps plus leastRuleCosts.
inline constexpr int kMaxSegmentBytes = 32;
std::vector<uint32_t> completionCosts(const Grammar& grammar, const TokenVocabulary& vocab);

}  // namespace tandem::grammar
