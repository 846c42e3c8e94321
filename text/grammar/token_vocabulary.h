// A tokenizer's vocabulary as the grammar matcher sees it: the bytes each
// token adds to the output text, arranged in a trie so that the tokens a
// grammar state allows are found in one walk that shares common prefixes.
//
// A token is a candidate when its bytes are not empty and it is not a
// special token (those never reach the text a client sees); the
// end-of-sequence ids are kept apart: a matcher allows them only when the
// text is a complete sentence of the grammar.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer/tokenizer.h"

namespace tandem::grammar {

class TokenVocabulary;
using TokenVocabularyPtr = std::shared_ptr<const TokenVocabulary>;

class TokenVocabulary {
 public:
  // one trie node, in preorder: a node's subtree is nodes [index, end).
  struct TrieNode {
    uint8_t byte = 0;      // the byte on the edge from its parent
    uint16_t depth = 0;    // the root is 0, a token's last byte is its length
    int32_t end = 0;       // one past the node's subtree
    int32_t first = 0;     // its tokens: token_order()[first, first + count)
    int32_t count = 0;
  };

  // `token_bytes[id]`: the bytes token id adds to the text (empty = never
  // allowed); `excluded[id]` (when not empty) marks tokens never allowed
  // (special ones); `eos_ids`: the end-of-sequence tokens.
  static TokenVocabularyPtr build(std::vector<std::string> token_bytes,
                                  const std::vector<bool>& excluded, std::vector<int32_t> eos_ids);
  // every token of `tokenizer` through tokenBytes(), special tokens
  // excluded (as the front end's skip_special_tokens decoding drops them).
  static TokenVocabularyPtr fromTokenizer(const tokenizer::Tokenizer& tokenizer,
                                          std::vector<int32_t> eos_ids);

  int size() const { return static_cast<int>(token_bytes_.size()); }
  const std::string& tokenBytes(int32_t id) const { return token_bytes_[id]; }
  bool isEos(int32_t id) const;
  // the token may be allowed by a grammar (non-empty bytes, not special, not EOS).
  bool isCandidate(int32_t id) const { return candidate_[id] != 0; }
  const std::vector<int32_t>& eosIds() const { return eos_ids_; }
  const std::vector<TrieNode>& trie() const { return trie_; }
  const std::vector<int32_t>& tokenOrder() const { return order_; }
  int maxTokenBytes() const { return max_bytes_; }

 private:
  TokenVocabulary() = default;

  std::vector<std::string> token_bytes_;
  std::vector<int32_t> eos_ids_;
  std::vector<TrieNode> trie_;
  std::vector<int32_t> order_;
  std::vector<uint8_t> candidate_;
  int max_bytes_ = 0;
};

}  // namespace tandem::grammar
