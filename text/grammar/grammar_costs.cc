#include "text/grammar/grammar_costs.h"

#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <utility>

namespace tandem::grammar {

std::vector<uint32_t> leastRuleCosts(const Grammar& grammar,
                                     absl::FunctionRef<uint32_t(uint32_t)> run_cost) {
  const size_t num_rules = grammar.rules.size();
  // per alternative: its rule, the cost of its runs plus its settled
  // references so far, and how many references are not settled yet.
  std::vector<uint32_t> owner;
  std::vector<uint32_t> sum;
  std::vector<uint32_t> pending;
  // where each rule is referenced, as alternative indices (a rule used twice
  // in one alternative is listed twice): CSR over rules.
  std::vector<uint32_t> uses_begin(num_rules + 1, 0);
  for (const Element& e : grammar.elements) {
    if (e.kind == Element::Kind::kRule) ++uses_begin[e.arg + 1];
  }
  for (size_t r = 0; r < num_rules; ++r) uses_begin[r + 1] += uses_begin[r];
  std::vector<uint32_t> uses(uses_begin.back());
  std::vector<uint32_t> fill(uses_begin.begin(), uses_begin.end() - 1);

  using Candidate = std::pair<uint32_t, uint32_t>;  // cost, rule
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> ready;
  for (uint32_t r = 0; r < num_rules; ++r) {
    for (uint32_t start : grammar.rules[r].alternatives) {
      const auto alt = static_cast<uint32_t>(owner.size());
      uint32_t cost = 0;
      uint32_t refs = 0;
      bool in_run = false;
      for (uint32_t p = start; grammar.elements[p].kind != Element::Kind::kEnd; ++p) {
        const Element& e = grammar.elements[p];
        if (e.kind == Element::Kind::kRule) {
          uses[fill[e.arg]++] = alt;
          ++refs;
          in_run = false;
        } else if (!in_run) {
          cost = addCosts(cost, run_cost(p));
          in_run = true;
        }
      }
      owner.push_back(r);
      sum.push_back(cost);
      pending.push_back(refs);
      if (refs == 0 && cost != kInfiniteCost) ready.push({cost, r});
    }
  }
  std::vector<uint32_t> least(num_rules, kInfiniteCost);
  while (!ready.empty()) {
    const auto [cost, rule] = ready.top();
    ready.pop();
    if (least[rule] != kInfiniteCost) continue;  // settled at a lower cost
    least[rule] = cost;
    for (uint32_t i = uses_begin[rule]; i < uses_begin[rule + 1]; ++i) {
      const uint32_t alt = uses[i];
      sum[alt] = addCosts(sum[alt], cost);
      if (--pending[alt] == 0 && sum[alt] != kInfiniteCost) ready.push({sum[alt], owner[alt]});
    }
  }
  return least;
}

namespace {

bool isLiteral(const Grammar& grammar, const Element& e, uint8_t* byte) {
  if (e.kind != Element::Kind::kBytes) return false;
  const ByteSet& set = grammar.byte_sets[e.arg];
  int found = -1;
  for (int w = 0; w < 4; ++w) {
    const uint64_t bits = set.words[w];
    if (bits == 0) continue;
    if ((bits & (bits - 1)) != 0 || found >= 0) return false;
    found = w * 64 + __builtin_ctzll(bits);
  }
  if (found < 0) return false;
  *byte = static_cast<uint8_t>(found);
  return true;
}

// the trie node below `node` on the edge `byte`, or -1 (children are in
// byte order, each child's subtree before the next sibling).
int32_t child(const std::vector<TokenVocabulary::TrieNode>& trie, int32_t node, uint8_t byte) {
  for (int32_t c = node + 1; c < trie[node].end; c = trie[c].end) {
    if (trie[c].byte == byte) return c;
    if (trie[c].byte > byte) return -1;
  }
  return -1;
}

}  // namespace

std::vector<uint32_t> completionCosts(const Grammar& grammar, const TokenVocabulary& vocab) {
  const std::vector<Element>& elements = grammar.elements;
  const std::vector<TokenVocabulary::TrieNode>& trie = vocab.trie();
  // the root's children by byte (the root has up to 256).
  std::array<int32_t, 256> first{};
  first.fill(-1);
  ByteSet single;  // bytes that are a whole candidate token
  for (int32_t c = 1; c < static_cast<int32_t>(trie.size()); c = trie[c].end) {
    first[trie[c].byte] = c;
    if (trie[c].count > 0) single.add(trie[c].byte);
  }
  const auto settable = [&](const ByteSet& set) {
    for (int w = 0; w < 4; ++w) {
      if ((set.words[w] & single.words[w]) != 0) return true;
    }
    return false;
  };
  // per position in a run of byte elements: the fewest tokens from it to
  // the run's end (filled backward, run by run; the slot just past a run,
  // a reference or an end, holds 0 while its run is filled).
  std::vector<uint32_t> run(elements.size() + 1, kInfiniteCost);
  for (size_t end = 0; end < elements.size();) {
    if (elements[end].kind != Element::Kind::kBytes) {
      ++end;
      continue;
    }
    size_t stop = end;
    while (stop < elements.size() && elements[stop].kind == Element::Kind::kBytes) ++stop;
    run[stop] = 0;
    for (size_t p = stop; p-- > end;) {
      uint8_t byte = 0;
      uint32_t best = kInfiniteCost;
      if (!isLiteral(grammar, elements[p], &byte)) {
        if (settable(grammar.byte_sets[elements[p].arg])) best = addCosts(1, run[p + 1]);
      } else {
        // every token spelling the literal bytes from p (stopping at the
        // run's end or at a wider byte set).
        int32_t node = first[byte];
        for (size_t q = p; node >= 0;) {
          if (trie[node].count > 0) best = std::min(best, addCosts(1, run[q + 1]));
          if (++q == stop || q - p == static_cast<size_t>(kMaxSegmentBytes) ||
              !isLiteral(grammar, elements[q], &byte)) {
            break;
          }
          node = child(trie, node, byte);
        }
      }
      run[p] = best;
    }
    end = stop;
  }
  const std::vector<uint32_t> least = leastRuleCosts(grammar, [&](uint32_t p) { return run[p]; });
  std::vector<uint32_t> suffix(elements.size(), 0);
  for (const Grammar::Rule& rule : grammar.rules) {
    for (uint32_t start : rule.alternatives) {
      uint32_t end = start;
      while (elements[end].kind != Element::Kind::kEnd) ++end;
      suffix[end] = 0;
      uint32_t stop = end;  // where the run of bytes holding p ends
      for (uint32_t p = end; p-- > start;) {
        if (elements[p].kind == Element::Kind::kRule) {
          suffix[p] = addCosts(least[elements[p].arg], suffix[p + 1]);
          stop = p;
        } else {
          suffix[p] = addCosts(run[p], suffix[stop]);
        }
      }
    }
  }
  return suffix;
}

}  // namespace tandem::grammar
