// The set of tokens allowed at one step, one bit per token id.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

namespace tandem::grammar {

class TokenMask {
 public:
  TokenMask() = default;
  explicit TokenMask(int num_tokens)
      : words_((static_cast<size_t>(num_tokens) + 63) / 64, 0), num_tokens_(num_tokens) {}

  void set(int32_t id) { words_[id >> 6] |= uint64_t{1} << (id & 63); }
  void clear(int32_t id) { words_[id >> 6] &= ~(uint64_t{1} << (id & 63)); }
  // no token allowed.
  void clearAll() { std::fill(words_.begin(), words_.end(), 0); }
  // false for ids outside [0, numTokens()).
  bool test(int32_t id) const {
    return id >= 0 && id < num_tokens_ && ((words_[id >> 6] >> (id & 63)) & 1);
  }
  int numTokens() const { return num_tokens_; }
  const std::vector<uint64_t>& words() const { return words_; }
  int count() const {
    int n = 0;
    for (uint64_t w : words_) n += std::popcount(w);
    return n;
  }
  // the lowest allowed id, -1 when none.
  int32_t first() const {
    for (size_t w = 0; w < words_.size(); ++w) {
      if (words_[w] != 0) return static_cast<int32_t>(w * 64 + std::countr_zero(words_[w]));
    }
    return -1;
  }
  bool none() const {
    for (uint64_t w : words_) {
      if (w != 0) return false;
    }
    return true;
  }

 private:
  std::vector<uint64_t> words_;
  int num_tokens_ = 0;
};

}  // namespace tandem::grammar
