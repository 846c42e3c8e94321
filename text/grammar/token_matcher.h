// One sequence's progress through a grammar, token by token: which tokens
// may come next, and the step over the one that was chosen. Each sequence
// (each of a request's n choices) has its own matcher; matchers of one
// grammar share its GrammarAutomaton and so each other's masks.
//
// Not thread-safe (see GrammarAutomaton): the engine thread owns it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "text/grammar/grammar_automaton.h"
#include "text/grammar/token_mask.h"

namespace tandem::grammar {

class TokenMatcher {
 public:
  explicit TokenMatcher(std::shared_ptr<GrammarAutomaton> automaton);
  ~TokenMatcher();
  // the automaton tracks state_ by address.
  TokenMatcher(const TokenMatcher&) = delete;
  TokenMatcher& operator=(const TokenMatcher&) = delete;

  // the tokens allowed next: those that keep the text a prefix of a
  // sentence of the grammar, plus end-of-sequence when the text is a whole
  // sentence; after an end-of-sequence token, end-of-sequence only. the
  // reference is valid until the next call on any matcher of this grammar.
  //
  // `tokens_left`: how many tokens may still be generated, this one
  // included (max_tokens and the context, whichever ends first). As it
  // comes down to the distance of the text from a whole sentence, only the
  // tokens that keep one reachable within it are allowed
  // (GrammarAutomaton::maskWithin), so that output cut at the budget is
  // still a sentence whenever the budget was at least the distance of the
  // empty text (GrammarAutomaton::distance of the initial state).
  const TokenMask& allowedTokens(int64_t tokens_left = GrammarAutomaton::kUnlimited);
  // the fewest tokens known to complete a sentence from here (see
  // GrammarAutomaton::distance; 0 once ended).
  uint32_t distance();
  // advances over `token`; false (nothing changes) when it is not allowed.
  bool accept(int32_t token);
  // accept() over each token in order; false at the first refused one
  // (the tokens before it stay accepted).
  bool acceptAll(std::span<const int32_t> tokens);

  // the text so far is a whole sentence.
  bool isComplete();
  // nothing may follow: an end-of-sequence token was accepted, or the text
  // is a whole sentence that no byte can extend.
  bool isTerminated();
  int numAccepted() const { return accepted_; }

 private:
  // lets the automaton trim its memory (state_, tracked, is carried over).
  void sync() { automaton_->trim(); }

  std::shared_ptr<GrammarAutomaton> automaton_;
  int32_t state_ = 0;
  bool ended_ = false;
  int accepted_ = 0;
  // allowedTokens()' result when the budget removes tokens (this
  // matcher's own, so a batch's matchers never share it).
  TokenMask within_;
};

}  // namespace tandem::grammar
