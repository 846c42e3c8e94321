// The tokens matched in the input before anything else (HF's added tokens,
// GGUF control and user-defined tokens): "<|im_start|>" in a prompt is one
// token, never its characters.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "text/tokenizer/tokenizer.h"

namespace tandem::tokenizer {

struct AddedToken {
  TokenId id = 0;
  std::string content;
  bool special = false;
  // the match also swallows whitespace on its left / right.
  bool lstrip = false;
  bool rstrip = false;
  // only matched between word boundaries.
  bool single_word = false;
  // matched in the normalized text rather than the raw input.
  bool normalized = false;
};

// one piece of the input: a run of text, or a token matched whole.
struct Fragment {
  std::string_view text;
  TokenId token = -1;  // >= 0 for a matched token
  bool isToken() const { return token >= 0; }
};

class AddedVocab {
 public:
  void add(AddedToken token);

  // cuts `text` around the tokens whose `normalized` flag equals
  // `normalized`, leftmost first, longest first at one position (HF's
  // leftmost-longest matching). Empty text runs are dropped.
  std::vector<Fragment> split(std::string_view text, bool normalized) const;

  bool hasNormalized() const { return has_normalized_; }
  const AddedToken* byId(TokenId id) const;
  const AddedToken* byContent(std::string_view content) const;
  const std::vector<AddedToken>& tokens() const { return tokens_; }

 private:
  std::vector<AddedToken> tokens_;
  absl::flat_hash_map<TokenId, size_t> by_id_;
  absl::flat_hash_map<std::string, size_t> by_content_;
  // candidate tokens by first byte, longest first.
  std::vector<size_t> by_first_byte_[256];
  bool has_normalized_ = false;
};

}  // namespace tandem::tokenizer
