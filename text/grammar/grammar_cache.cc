#include "text/grammar/grammar_cache.h"

#include "text/grammar/grammar_parser.h"

namespace tandem::grammar {

GrammarCache::GrammarCache(TokenVocabularyPtr vocabulary, size_t max_grammars,
                           size_t automaton_max_bytes)
    : vocab_(std::move(vocabulary)),
      max_grammars_(std::max<size_t>(max_grammars, 1)),
      automaton_max_bytes_(automaton_max_bytes) {}

absl::StatusOr<std::shared_ptr<GrammarAutomaton>> GrammarCache::get(std::string_view view) {
  const std::string text(view);
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(text);
    if (it != entries_.end()) {
      ++hits_;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.automaton;
    }
  }
  // compile outside the lock: another thread may compile the same text at
  // once; the first to insert wins.
  absl::StatusOr<Grammar> grammar = parseGrammar(text);
  if (!grammar.ok()) return grammar.status();
  auto automaton =
      std::make_shared<GrammarAutomaton>(std::move(*grammar), vocab_,
                                         AutomatonLimits{.max_bytes = automaton_max_bytes_});
  std::lock_guard lock(mu_);
  ++compiled_;
  auto it = entries_.find(text);
  if (it != entries_.end()) return it->second.automaton;
  lru_.emplace_front(text);
  entries_.emplace(lru_.front(), Entry{automaton, lru_.begin()});
  while (entries_.size() > max_grammars_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  return automaton;
}

GrammarCacheStats GrammarCache::stats() const {
  std::lock_guard lock(mu_);
  return {compiled_, hits_, static_cast<int64_t>(entries_.size())};
}

}  // namespace tandem::grammar
