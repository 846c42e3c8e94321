// The BPE model shared by byte-level (GPT-2, Llama 3, Qwen) and
// SentencePiece-style (Llama 2, stories) vocabularies: a vocabulary, ranked
// merges, and the merge loop that turns one pre-token into ids.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::tokenizer {

struct BpeOptions {
  // characters missing from the vocabulary become their <0xXX> byte tokens.
  bool byte_fallback = false;
  // a pre-token that is itself in the vocabulary is taken whole (llama 3).
  bool ignore_merges = false;
  // consecutive unknown characters become one unk token.
  bool fuse_unk = false;
  std::optional<TokenId> unk_id;
};

class BpeModel {
 public:
  // `vocab[i]` is the string of id i (empty for holes); `merges` are pairs
  // of token strings, highest priority first. Fails on a merge whose parts
  // or result are not in the vocabulary.
  absl::Status init(std::vector<std::string> vocab,
                    const std::vector<std::pair<std::string, std::string>>& merges,
                    const BpeOptions& options);

  // appends the ids of one pre-token (already in vocabulary spelling).
  void tokenize(std::string_view word, std::vector<TokenId>* out) const;

  // the most bytes (in vocabulary spelling) one token of tokenize() stands
  // for, when every character of a pre-token spelled with
  // `byte_stand_ins` (every character one of GPT-2's 256 byte stand-ins)
  // is sure to become tokens: each is in the vocabulary, or its bytes are
  // (byte fallback), or it becomes one unknown token (not fused). 0
  // otherwise: a character with none of these is dropped, and fused
  // unknown tokens swallow any number of characters.
  size_t maxBytesPerToken(bool byte_stand_ins) const;

  std::optional<TokenId> find(std::string_view token) const;
  const std::string& token(TokenId id) const { return vocab_[id]; }
  int size() const { return static_cast<int>(vocab_.size()); }

 private:
  struct Merge {
    int32_t rank;
    TokenId merged;
  };
  static uint64_t pairKey(TokenId a, TokenId b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  void mergeWord(std::string_view word, std::vector<TokenId>* out) const;

  std::vector<std::string> vocab_;
  absl::flat_hash_map<std::string, TokenId> ids_;
  absl::flat_hash_map<uint64_t, Merge> merges_;
  BpeOptions options_;

  // pre-tokens repeat a lot in real text; remembering them skips the merge
  // loop. bounded by clearing, which is cheap and rare.
  static constexpr size_t kCacheCapacity = 1 << 15;
  static constexpr size_t kMaxCachedWordBytes = 64;
  mutable absl::Mutex cache_mu_;
  mutable absl::flat_hash_map<std::string, std::vector<TokenId>> cache_ ABSL_GUARDED_BY(cache_mu_);
};

}  // namespace tandem::tokenizer
