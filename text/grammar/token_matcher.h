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
  int numAccepted() const { return static_cast<int>(tokens_.size()); }

 private:
  // brings state_ into the automaton's current epoch (replaying tokens_).
  void sync();

  std::shared_ptr<GrammarAutomaton> automaton_;
  uint64_t epoch_ = 0;
  int32_t state_ = 0;
  bool ended_ = false;
  // the tokens accepted, to replay after the automaton trimmed its states.
  std::vector<int32_t> tokens_;
  // allowedTokens()' result when the budget removes tokens (this
  // matcher's own, so a batch's matchers never share it).
  TokenMask within_;
};

}  // namespace tandem::grammar
