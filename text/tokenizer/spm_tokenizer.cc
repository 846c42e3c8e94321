#include "text/tokenizer/spm_tokenizer.h"

#include <algorithm>
#include <queue>

#include "absl/strings/str_replace.h"
#include "text/tokenizer/text_util.h"

namespace tandem::tokenizer {
namespace {

constexpr absl::string_view kSpace = "\xE2\x96\x81";  // ▁

}  // namespace

SpmTokenizer::SpmTokenizer(std::vector<std::string> tokens, std::vector<float> scores,
                           std::vector<GgufTokenType> types, Options options)
    : tokens_(std::move(tokens)),
      scores_(std::move(scores)),
      types_(std::move(types)),
      options_(options) {
  ids_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    auto id = static_cast<TokenId>(i);
    ids_[tokens_[i]] = id;  // the last duplicate wins, as in llama.cpp
    max_token_bytes_ = std::max(max_token_bytes_, tokens_[i].size());
    GgufTokenType t = type(id);
    // control and user-defined tokens written in the text are matched whole
    if (t == GgufTokenType::kControl || t == GgufTokenType::kUserDefined) {
      AddedToken added;
      added.id = id;
      added.content = tokens_[i];
      added.special = t == GgufTokenType::kControl;
      specials_.add(std::move(added));
    }
  }
}

GgufTokenType SpmTokenizer::type(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= types_.size()) return GgufTokenType::kNormal;
  return types_[id];
}

std::vector<TokenId> SpmTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<TokenId> out;
  if (add_special && options_.add_bos && options_.bos_id) out.push_back(*options_.bos_id);
  // llama.cpp: a space goes in front of the first text and of any text that
  // follows a special token.
  bool prev_special = true;
  std::string buf;
  for (const Fragment& frag : specials_.split(text, /*normalized=*/false)) {
    if (frag.isToken()) {
      out.push_back(frag.token);
      prev_special = true;
      continue;
    }
    buf.clear();
    if (options_.add_space_prefix && prev_special) buf = " ";
    buf.append(frag.text);
    tokenizeText(absl::StrReplaceAll(buf, {{" ", kSpace}}), &out);
    prev_special = false;
  }
  if (add_special && options_.add_eos && options_.eos_id) out.push_back(*options_.eos_id);
  return out;
}

void SpmTokenizer::tokenizeText(std::string_view text, std::vector<TokenId>* out) const {
  struct Symbol {
    int prev, next;
    size_t offset, n;
  };
  std::vector<Symbol> symbols;
  for (size_t offs = 0; offs < text.size();) {
    size_t len = std::min(utf8CharLen(static_cast<unsigned char>(text[offs])), text.size() - offs);
    int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, offs + len == text.size() ? -1 : index + 1, offs, len});
    offs += len;
  }
  struct Bigram {
    int left, right;
    float score;
    size_t size;
  };
  // highest score first, leftmost first among equals
  auto worse = [](const Bigram& l, const Bigram& r) {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(worse);
  // which two symbols a merged piece came from, to re-split pieces that are
  // not themselves tokens.
  absl::flat_hash_map<std::string, std::pair<int, int>> rev_merge;

  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    std::string piece(text.substr(symbols[left].offset, symbols[left].n + symbols[right].n));
    auto it = ids_.find(asAbsl(piece));
    if (it == ids_.end()) return;
    float score = static_cast<size_t>(it->second) < scores_.size() ? scores_[it->second] : 0.0f;
    queue.push({left, right, score, piece.size()});
    rev_merge[piece] = {left, right};
  };
  for (size_t i = 1; i < symbols.size(); ++i) try_add(static_cast<int>(i) - 1, static_cast<int>(i));

  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.n == 0 || right.n == 0 || left.n + right.n != b.size) continue;
    left.n += right.n;
    right.n = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = b.left;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  auto resegment = [&](auto&& self, const Symbol& symbol) -> void {
    std::string_view piece = text.substr(symbol.offset, symbol.n);
    auto it = ids_.find(asAbsl(piece));
    if (it != ids_.end()) {
      out->push_back(it->second);
      return;
    }
    auto p = rev_merge.find(asAbsl(piece));
    if (p == rev_merge.end()) {
      for (char c : piece) out->push_back(byteToken(static_cast<uint8_t>(c)));
      return;
    }
    self(self, symbols[p->second.first]);
    self(self, symbols[p->second.second]);
  };
  for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) resegment(resegment, symbols[i]);
}

TokenId SpmTokenizer::byteToken(uint8_t byte) const {
  auto it = ids_.find(byteTokenName(byte));
  if (it != ids_.end()) return it->second;
  it = ids_.find(std::string(1, static_cast<char>(byte)));
  if (it != ids_.end()) return it->second;
  return options_.unk_id.value_or(0);
}

std::string SpmTokenizer::decode(const std::vector<TokenId>& ids, bool skip_special) const {
  std::string out;
  for (TokenId id : ids) {
    if (skip_special && isSpecial(id)) continue;
    out += tokenBytes(id);
  }
  // the space encode() put in front is not part of the text
  if (options_.add_space_prefix && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

std::string SpmTokenizer::tokenBytes(TokenId id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_.size()) return "";
  const std::string& token = tokens_[id];
  switch (type(id)) {
    case GgufTokenType::kByte:
      if (auto byte = parseByteToken(token)) return std::string(1, static_cast<char>(*byte));
      return token;
    case GgufTokenType::kControl:
    case GgufTokenType::kUserDefined:
      return token;
    default:
      return absl::StrReplaceAll(token, {{kSpace, " "}});
  }
}

bool SpmTokenizer::isSpecial(TokenId id) const {
  GgufTokenType t = type(id);
  return t == GgufTokenType::kControl || t == GgufTokenType::kUnknown;
}

std::optional<TokenId> SpmTokenizer::tokenToId(std::string_view token) const {
  auto it = ids_.find(asAbsl(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

}  // namespace tandem::tokenizer
