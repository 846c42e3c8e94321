#include "text/tokenizer/added_vocab.h"

#include <algorithm>

#include <unicode/uchar.h>

#include "text/tokenizer/text_util.h"

namespace tandem::tokenizer {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// whether the character ending at / starting at `pos` is a word character,
// for single_word tokens.
bool wordCharBefore(std::string_view text, size_t pos) {
  if (pos == 0) return false;
  size_t b = pos - 1;
  while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80) --b;
  UChar32 cp;
  int32_t i = 0;
  U8_NEXT(reinterpret_cast<const uint8_t*>(text.data() + b), i, static_cast<int32_t>(pos - b), cp);
  return cp >= 0 && (u_isalnum(cp) || cp == '_');
}

bool wordCharAt(std::string_view text, size_t pos) {
  if (pos >= text.size()) return false;
  UChar32 cp;
  int32_t i = 0;
  U8_NEXT(reinterpret_cast<const uint8_t*>(text.data() + pos), i,
          static_cast<int32_t>(text.size() - pos), cp);
  return cp >= 0 && (u_isalnum(cp) || cp == '_');
}

}  // namespace

void AddedVocab::add(AddedToken token) {
  if (token.content.empty()) return;
  auto existing = by_content_.find(token.content);
  size_t index;
  if (existing != by_content_.end()) {
    index = existing->second;
    tokens_[index] = std::move(token);
  } else {
    index = tokens_.size();
    tokens_.push_back(std::move(token));
    auto& bucket = by_first_byte_[static_cast<unsigned char>(tokens_[index].content[0])];
    bucket.push_back(index);
    std::stable_sort(bucket.begin(), bucket.end(), [&](size_t a, size_t b) {
      return tokens_[a].content.size() > tokens_[b].content.size();
    });
  }
  const AddedToken& t = tokens_[index];
  by_content_[t.content] = index;
  by_id_[t.id] = index;
  has_normalized_ = has_normalized_ || t.normalized;
}

std::vector<Fragment> AddedVocab::split(std::string_view text, bool normalized) const {
  std::vector<Fragment> out;
  size_t text_start = 0;  // start of the pending text run
  size_t pos = 0;
  while (pos < text.size()) {
    const auto& bucket = by_first_byte_[static_cast<unsigned char>(text[pos])];
    const AddedToken* hit = nullptr;
    for (size_t index : bucket) {
      const AddedToken& t = tokens_[index];
      if (t.normalized != normalized) continue;
      if (text.compare(pos, t.content.size(), t.content) != 0) continue;
      if (t.single_word &&
          (wordCharBefore(text, pos) || wordCharAt(text, pos + t.content.size()))) {
        continue;
      }
      hit = &t;
      break;
    }
    if (hit == nullptr) {
      ++pos;
      continue;
    }
    size_t begin = pos, end = pos + hit->content.size();
    if (hit->lstrip) {
      while (begin > text_start && isSpace(text[begin - 1])) --begin;
    }
    if (hit->rstrip) {
      while (end < text.size() && isSpace(text[end])) ++end;
    }
    if (begin > text_start) out.push_back({text.substr(text_start, begin - text_start)});
    out.push_back({std::string_view(), hit->id});
    text_start = pos = end;
  }
  if (text_start < text.size()) out.push_back({text.substr(text_start)});
  return out;
}

const AddedToken* AddedVocab::byId(TokenId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

const AddedToken* AddedVocab::byContent(std::string_view content) const {
  auto it = by_content_.find(asAbsl(content));
  return it == by_content_.end() ? nullptr : &tokens_[it->second];
}

}  // namespace tandem::tokenizer
