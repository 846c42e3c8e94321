#include "text/grammar/grammar_automaton.h"

#include <algorithm>

#include "common/status.h"

namespace tandem::grammar {
namespace {

uint64_t nodeKey(uint32_t pos, int32_t parent) {
  return (uint64_t{pos} << 32) | static_cast<uint32_t>(parent + 1);
}

}  // namespace

GrammarAutomaton::GrammarAutomaton(Grammar grammar, TokenVocabularyPtr vocabulary,
                                   size_t max_bytes)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocabulary)),
      max_bytes_(max_bytes),
      ended_mask_(vocab_->size()) {
  for (int32_t id : vocab_->eosIds()) {
    if (id >= 0 && id < vocab_->size()) ended_mask_.set(id);
  }
  walk_.resize(static_cast<size_t>(vocab_->maxTokenBytes()) + 1);
}

int32_t GrammarAutomaton::initialState() {
  if (initial_ != kUnknown) return initial_;
  out_.clear();
  out_accepting_ = false;
  visited_.clear();
  for (uint32_t start : grammar_.rules[grammar_.root].alternatives) expand(start, -1);
  initial_ = internState();
  // a grammar whose root matches nothing at all still has a (dead-end) state.
  if (initial_ == kDead) {
    states_.push_back({});
    initial_ = static_cast<int32_t>(states_.size() - 1);
  }
  return initial_;
}

void GrammarAutomaton::expand(uint32_t pos, int32_t parent) {
  if (!visited_.insert(nodeKey(pos, parent)).second) return;
  const Element& e = grammar_.elements[pos];
  switch (e.kind) {
    case Element::Kind::kBytes:
      out_.push_back(internNode(pos, parent));
      return;
    case Element::Kind::kEnd:
      if (parent < 0) {
        out_accepting_ = true;
      } else {
        const Node p = nodes_[parent];
        expand(p.pos, p.parent);
      }
      return;
    case Element::Kind::kRule: {
      // a reference last in its alternative returns straight to `parent`.
      const bool last = grammar_.elements[pos + 1].kind == Element::Kind::kEnd;
      const int32_t ret = last ? parent : internNode(pos + 1, parent);
      for (uint32_t start : grammar_.rules[e.arg].alternatives) expand(start, ret);
      return;
    }
  }
}

int32_t GrammarAutomaton::internNode(uint32_t pos, int32_t parent) {
  auto [it, added] = node_ids_.try_emplace(nodeKey(pos, parent), static_cast<int32_t>(nodes_.size()));
  if (added) {
    nodes_.push_back({pos, parent});
    bytes_ += sizeof(Node) + 24;
  }
  return it->second;
}

int32_t GrammarAutomaton::internState() {
  std::sort(out_.begin(), out_.end());
  out_.erase(std::unique(out_.begin(), out_.end()), out_.end());
  if (out_.empty() && !out_accepting_) return kDead;
  std::vector<int32_t> key = out_;
  if (out_accepting_) key.push_back(-1);
  auto it = state_ids_.find(key);
  if (it != state_ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(states_.size());
  State state;
  state.stacks = out_;
  state.accepting = out_accepting_;
  states_.push_back(std::move(state));
  bytes_ += sizeof(State) + 2 * key.size() * sizeof(int32_t) + 48;
  state_ids_.emplace(std::move(key), id);
  return id;
}

int32_t GrammarAutomaton::computeStep(int32_t state, uint8_t byte) {
  if (states_[state].next == nullptr) {
    states_[state].next.reset(new int32_t[256]);
    std::fill_n(states_[state].next.get(), 256, kUnknown);
    bytes_ += 256 * sizeof(int32_t);
  }
  // the row's memory stays put while states_ grows.
  int32_t* row = states_[state].next.get();
  out_.clear();
  out_accepting_ = false;
  visited_.clear();
  for (int32_t id : states_[state].stacks) {
    const Node node = nodes_[id];
    const Element& e = grammar_.elements[node.pos];
    if (grammar_.byte_sets[e.arg].contains(byte)) expand(node.pos + 1, node.parent);
  }
  const int32_t next = internState();
  row[byte] = next;
  return next;
}

int32_t GrammarAutomaton::stepToken(int32_t state, int32_t id) {
  if (id < 0 || id >= vocab_->size() || vocab_->isEos(id) || !vocab_->isCandidate(id)) {
    return kDead;
  }
  for (char c : vocab_->tokenBytes(id)) {
    state = step(state, static_cast<uint8_t>(c));
    if (state == kDead) return kDead;
  }
  return state;
}

const TokenMask& GrammarAutomaton::mask(int32_t state) {
  if (states_[state].mask != nullptr) {
    ++mask_hits_;
    return *states_[state].mask;
  }
  ++masks_computed_;
  auto mask = std::make_unique<TokenMask>(vocab_->size());
  const std::vector<TokenVocabulary::TrieNode>& trie = vocab_->trie();
  const std::vector<int32_t>& order = vocab_->tokenOrder();
  walk_[0] = state;
  const auto n = static_cast<int32_t>(trie.size());
  for (int32_t i = 1; i < n;) {
    const TokenVocabulary::TrieNode& node = trie[i];
    const int32_t next = step(walk_[node.depth - 1], node.byte);
    if (next == kDead) {
      i = node.end;  // no token below this prefix is allowed.
      continue;
    }
    walk_[node.depth] = next;
    for (int32_t k = node.first; k < node.first + node.count; ++k) mask->set(order[k]);
    ++i;
  }
  if (states_[state].accepting || mask->none()) {
    for (int32_t id : vocab_->eosIds()) {
      if (id >= 0 && id < vocab_->size()) mask->set(id);
    }
  }
  bytes_ += mask->words().size() * sizeof(uint64_t) + sizeof(TokenMask);
  states_[state].mask = std::move(mask);
  return *states_[state].mask;
}

bool GrammarAutomaton::trim() {
  if (bytes_ <= max_bytes_) return false;
  reset();
  return true;
}

void GrammarAutomaton::reset() {
  nodes_.clear();
  node_ids_.clear();
  states_.clear();
  state_ids_.clear();
  initial_ = kUnknown;
  bytes_ = 0;
  ++epoch_;
  ++trims_;
}

AutomatonStats GrammarAutomaton::stats() const {
  AutomatonStats s;
  s.states = static_cast<int64_t>(states_.size());
  s.stacks = static_cast<int64_t>(nodes_.size());
  s.masks_computed = masks_computed_;
  s.mask_hits = mask_hits_;
  s.trims = trims_;
  s.bytes = bytes_;
  return s;
}

}  // namespace tandem::grammar
