#include "text/grammar/token_matcher.h"

#include "common/status.h"

namespace tandem::grammar {

TokenMatcher::TokenMatcher(std::shared_ptr<GrammarAutomaton> automaton)
    : automaton_(std::move(automaton)), state_(automaton_->initialState()) {
  automaton_->track(&state_);
}

TokenMatcher::~TokenMatcher() { automaton_->untrack(&state_); }

const TokenMask& TokenMatcher::allowedTokens(int64_t tokens_left) {
  sync();
  if (ended_) return automaton_->endedMask();
  return automaton_->maskWithin(state_, tokens_left, within_);
}

uint32_t TokenMatcher::distance() {
  sync();
  return ended_ ? 0 : automaton_->distance(state_);
}

bool TokenMatcher::accept(int32_t token) {
  sync();
  const TokenVocabulary& vocab = automaton_->vocabulary();
  if (vocab.isEos(token)) {
    if (!ended_ && !automaton_->mask(state_).test(token)) return false;
    ended_ = true;
    return true;
  }
  if (ended_) return false;
  const int32_t next = automaton_->stepToken(state_, token);
  if (next == GrammarAutomaton::kDead) return false;
  state_ = next;
  ++accepted_;
  return true;
}

bool TokenMatcher::acceptAll(std::span<const int32_t> tokens) {
  for (int32_t token : tokens) {
    if (!accept(token)) return false;
  }
  return true;
}

bool TokenMatcher::isComplete() {
  sync();
  return ended_ || automaton_->accepting(state_);
}

bool TokenMatcher::isTerminated() {
  sync();
  return ended_ || (automaton_->accepting(state_) && !automaton_->canContinue(state_));
}

}  // namespace tandem::grammar
