#include "text/grammar/grammar_automaton.h"

#include <algorithm>
#include <functional>

#include "common/status.h"
#include "text/grammar/grammar_costs.h"

namespace tandem::grammar {
namespace {

uint64_t nodeKey(uint32_t pos, int32_t parent) {
  return (uint64_t{pos} << 32) | static_cast<uint32_t>(parent + 1);
}

}  // namespace

GrammarAutomaton::GrammarAutomaton(Grammar grammar, TokenVocabularyPtr vocabulary,
                                   AutomatonLimits limits)
    : grammar_(std::move(grammar)),
      vocab_(std::move(vocabulary)),
      limits_(limits),
      completion_(completionCosts(grammar_, *vocab_)),
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
  bool fits = true;
  for (uint32_t start : grammar_.rules[grammar_.root].alternatives) {
    fits = fits && expand(start, -1);
  }
  if (!fits) {
    ++step_overflows_;
    out_.clear();
    out_accepting_ = false;
  }
  initial_ = internState();
  // a grammar whose root matches nothing at all still has a (dead-end) state.
  if (initial_ == kDead) {
    states_.push_back({});
    states_.back().distance = kInfiniteCost;
    initial_ = static_cast<int32_t>(states_.size() - 1);
  }
  return initial_;
}

bool GrammarAutomaton::expand(uint32_t pos, int32_t parent) {
  pending_.clear();
  pending_.push_back({pos, parent});
  while (!pending_.empty()) {
    const auto [p, up] = pending_.back();
    pending_.pop_back();
    if (!visited_.insert(nodeKey(p, up)).second) continue;
    ++expansions_;
    if (visited_.size() > static_cast<size_t>(limits_.expansions_per_step)) return false;
    const Element& e = grammar_.elements[p];
    switch (e.kind) {
      case Element::Kind::kBytes:
        out_.push_back(internNode(p, up));
        break;
      case Element::Kind::kEnd:
        if (up < 0) {
          out_accepting_ = true;
        } else {
          pending_.push_back({nodes_[up].pos, nodes_[up].parent});
        }
        break;
      case Element::Kind::kRule: {
        // a reference last in its alternative returns straight to `up`.
        const bool last = grammar_.elements[p + 1].kind == Element::Kind::kEnd;
        const int32_t ret = last ? up : internNode(p + 1, up);
        for (uint32_t start : grammar_.rules[e.arg].alternatives) pending_.push_back({start, ret});
        break;
      }
    }
  }
  return true;
}

int32_t GrammarAutomaton::internNode(uint32_t pos, int32_t parent) {
  auto [it, added] = node_ids_.try_emplace(nodeKey(pos, parent), static_cast<int32_t>(nodes_.size()));
  if (added) {
    const uint32_t below = parent < 0 ? 0 : nodes_[parent].distance;
    nodes_.push_back({pos, parent, addCosts(completion_[pos], below)});
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
  state.distance = kInfiniteCost;
  if (out_accepting_) state.distance = 0;
  for (int32_t node : out_) state.distance = std::min(state.distance, nodes_[node].distance);
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
  if (work_left_ <= 0) return kDead;  // not memoized: only this mask is cut.
  out_.clear();
  out_accepting_ = false;
  visited_.clear();
  bool fits = true;
  for (size_t i = 0; fits && i < states_[state].stacks.size(); ++i) {
    const Node node = nodes_[states_[state].stacks[i]];
    const Element& e = grammar_.elements[node.pos];
    if (grammar_.byte_sets[e.arg].contains(byte)) fits = expand(node.pos + 1, node.parent);
  }
  if (work_left_ != kUnlimited) work_left_ -= static_cast<int64_t>(visited_.size()) + 1;
  if (!fits) {
    // too ambiguous here: refused for good (the same every time).
    ++step_overflows_;
    row[byte] = kDead;
    return kDead;
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
  auto by_distance = std::make_unique<TokensByDistance>();
  const uint32_t here = states_[state].distance;
  const std::vector<TokenVocabulary::TrieNode>& trie = vocab_->trie();
  const std::vector<int32_t>& order = vocab_->tokenOrder();
  walk_[0] = state;
  work_left_ = limits_.mask_work;
  const auto n = static_cast<int32_t>(trie.size());
  for (int32_t i = 1; i < n;) {
    const TokenVocabulary::TrieNode& node = trie[i];
    const int32_t next = step(walk_[node.depth - 1], node.byte);
    if (next == kDead) {
      i = node.end;  // no token below this prefix is allowed.
      continue;
    }
    walk_[node.depth] = next;
    const uint32_t there = states_[next].distance;
    for (int32_t k = node.first; k < node.first + node.count; ++k) {
      mask->set(order[k]);
      // (no budget applies where no completion is known)
      if (here == kInfiniteCost || there == here) continue;
      if (there < here) {
        by_distance->nearer.push_back(order[k]);
      } else {
        by_distance->farther.push_back({there, order[k]});
      }
    }
    ++i;
  }
  if (work_left_ <= 0) ++mask_overflows_;
  work_left_ = kUnlimited;
  if (states_[state].accepting || mask->none()) {
    for (int32_t id : vocab_->eosIds()) {
      if (id >= 0 && id < vocab_->size()) mask->set(id);
    }
  }
  std::sort(by_distance->farther.begin(), by_distance->farther.end(), std::greater<>());
  bytes_ += mask->words().size() * sizeof(uint64_t) + sizeof(TokenMask) +
            sizeof(TokensByDistance) + by_distance->nearer.size() * sizeof(int32_t) +
            by_distance->farther.size() * sizeof(std::pair<uint32_t, int32_t>);
  states_[state].mask = std::move(mask);
  states_[state].by_distance = std::move(by_distance);
  return *states_[state].mask;
}

const TokenMask& GrammarAutomaton::maskWithin(int32_t state, int64_t tokens_left,
                                              TokenMask& scratch) {
  const TokenMask& full = mask(state);
  const uint32_t here = states_[state].distance;
  const TokensByDistance& by = *states_[state].by_distance;
  // after this token, at most `after` more.
  const int64_t after = std::max<int64_t>(tokens_left, 1) - 1;
  if (here == kInfiniteCost || (by.farther.empty() ? after >= here : after >= by.farther[0].first)) {
    return full;  // every allowed token leaves a completion within the budget
  }
  if (after >= here) {
    // the tokens that go farther than the budget reaches are removed.
    scratch = full;
    for (const auto& [there, id] : by.farther) {
      if (there <= after) break;
      scratch.clear(id);
    }
    return scratch;
  }
  // the budget is already short of the nearest sentence: only tokens that
  // come nearer (there is one: the first token of a shortest completion);
  // none can be known when the mask was cut short, then mask(state).
  if (by.nearer.empty()) return full;
  if (scratch.numTokens() != vocab_->size()) scratch = TokenMask(vocab_->size());
  scratch.clearAll();
  for (int32_t id : by.nearer) scratch.set(id);
  return scratch;
}

void GrammarAutomaton::untrack(int32_t* slot) {
  auto it = std::find(tracked_.begin(), tracked_.end(), slot);
  if (it == tracked_.end()) return;
  *it = tracked_.back();
  tracked_.pop_back();
}

bool GrammarAutomaton::trim() {
  if (bytes_ <= limits_.max_bytes) return false;
  absl::flat_hash_map<int32_t, int32_t> index;  // tracked state -> saved
  const SavedState saved = saveTracked(index);
  reset();
  restoreTracked(saved, index);
  return true;
}

GrammarAutomaton::SavedState GrammarAutomaton::saveTracked(
    absl::flat_hash_map<int32_t, int32_t>& index) const {
  SavedState saved;
  absl::flat_hash_map<int32_t, int32_t> node_index;  // node id -> saved
  std::vector<int32_t> path;
  for (const int32_t* slot : tracked_) {
    if (*slot < 0 || index.contains(*slot)) continue;
    index.emplace(*slot, static_cast<int32_t>(saved.stacks.size()));
    const State& state = states_[*slot];
    std::vector<int32_t>& stacks = saved.stacks.emplace_back();
    saved.accepting.push_back(state.accepting);
    for (int32_t top : state.stacks) {
      // the nodes not saved yet from the top down, then saved bottom up so
      // a parent always comes before its children.
      path.clear();
      for (int32_t n = top; n >= 0 && !node_index.contains(n); n = nodes_[n].parent) path.push_back(n);
      for (size_t i = path.size(); i-- > 0;) {
        const Node& node = nodes_[path[i]];
        const int32_t parent = node.parent < 0 ? -1 : node_index.at(node.parent);
        node_index.emplace(path[i], static_cast<int32_t>(saved.nodes.size()));
        saved.nodes.push_back({node.pos, parent});
      }
      stacks.push_back(node_index.at(top));
    }
  }
  return saved;
}

void GrammarAutomaton::restoreTracked(const SavedState& saved,
                                      const absl::flat_hash_map<int32_t, int32_t>& index) {
  std::vector<int32_t> ids(saved.nodes.size());
  for (size_t i = 0; i < saved.nodes.size(); ++i) {
    const auto [pos, parent] = saved.nodes[i];
    ids[i] = internNode(pos, parent < 0 ? -1 : ids[parent]);
  }
  std::vector<int32_t> remade(saved.stacks.size());
  for (size_t k = 0; k < saved.stacks.size(); ++k) {
    out_.clear();
    for (int32_t n : saved.stacks[k]) out_.push_back(ids[n]);
    out_accepting_ = saved.accepting[k];
    remade[k] = internState();
    if (remade[k] == kDead) {  // a dead-end state (a root that matches nothing)
      states_.push_back({});
      states_.back().distance = kInfiniteCost;
      remade[k] = static_cast<int32_t>(states_.size() - 1);
    }
  }
  for (int32_t* slot : tracked_) {
    if (*slot >= 0) *slot = remade[index.at(*slot)];
  }
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
  s.step_overflows = step_overflows_;
  s.mask_overflows = mask_overflows_;
  s.expansions = expansions_;
  s.bytes = bytes_;
  return s;
}

}  // namespace tandem::grammar
