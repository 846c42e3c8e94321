// The compiled grammars of one engine: grammar text -> its automaton over
// the engine's vocabulary, compiled once and kept while used (bounded: the
// least recently used beyond `max_grammars` are dropped; requests still
// holding one keep it alive).
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "text/grammar/grammar_automaton.h"
#include "text/grammar/token_vocabulary.h"

namespace tandem::grammar {

struct GrammarCacheStats {
  int64_t compiled = 0;
  int64_t hits = 0;
  int64_t entries = 0;
};

class GrammarCache {
 public:
  static constexpr size_t kDefaultMaxGrammars = 64;

  explicit GrammarCache(TokenVocabularyPtr vocabulary,
                        size_t max_grammars = kDefaultMaxGrammars,
                        size_t automaton_max_bytes = GrammarAutomaton::kDefaultMaxBytes);

  // the automaton of `text` (parseGrammar's errors: InvalidArgument).
  // thread-safe; the automaton itself is not (see GrammarAutomaton).
  absl::StatusOr<std::shared_ptr<GrammarAutomaton>> get(std::string_view text);

  const TokenVocabulary& vocabulary() const { return *vocab_; }
  GrammarCacheStats stats() const;

 private:
  struct Entry {
    std::shared_ptr<GrammarAutomaton> automaton;
    std::list<std::string>::iterator lru;
  };

  const TokenVocabularyPtr vocab_;
  const size_t max_grammars_;
  const size_t automaton_max_bytes_;
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_;  // guarded by mu_
  std::list<std::string> lru_;                        // most recent first
  int64_t compiled_ = 0;
  int64_t hits_ = 0;
};

}  // namespace tandem::grammar
