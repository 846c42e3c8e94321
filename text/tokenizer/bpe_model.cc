#include "text/tokenizer/bpe_model.h"

#include <algorithm>
#include <queue>

#include "absl/strings/str_cat.h"
#include "text/tokenizer/text_util.h"

namespace tandem::tokenizer {

absl::Status BpeModel::init(std::vector<std::string> vocab,
                            const std::vector<std::pair<std::string, std::string>>& merges,
                            const BpeOptions& options) {
  vocab_ = std::move(vocab);
  options_ = options;
  ids_.reserve(vocab_.size());
  for (size_t i = 0; i < vocab_.size(); ++i) {
    if (!vocab_[i].empty()) ids_.emplace(vocab_[i], static_cast<TokenId>(i));
  }
  merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [a, b] = merges[rank];
    auto ia = find(a), ib = find(b);
    joined.assign(a).append(b);
    auto im = find(joined);
    if (!ia || !ib || !im) {
      return absl::InvalidArgumentError(
          absl::StrCat("merge ", rank, " (\"", a, "\", \"", b, "\") uses a token not in the vocabulary"));
    }
    // the first (highest priority) occurrence of a pair wins, as in HF
    merges_.try_emplace(pairKey(*ia, *ib), Merge{static_cast<int32_t>(rank), *im});
  }
  return absl::OkStatus();
}

size_t BpeModel::maxBytesPerToken(bool byte_stand_ins) const {
  auto all_bytes = [this](auto&& spell) {
    for (int b = 0; b < 256; ++b) {
      if (!find(spell(static_cast<uint8_t>(b)))) return false;
    }
    return true;
  };
  auto stand_in = [](uint8_t b) {
    return byteLevelEncode(std::string_view(reinterpret_cast<const char*>(&b), 1));
  };
  const bool covered = (byte_stand_ins && all_bytes(stand_in)) ||
                       (options_.byte_fallback && all_bytes(byteTokenName)) ||
                       (options_.unk_id && !options_.fuse_unk);
  if (!covered) return 0;
  // an unknown token stands for one character, up to 4 bytes.
  size_t most = options_.unk_id ? 4 : 1;
  for (const std::string& token : vocab_) most = std::max(most, token.size());
  return most;
}

std::optional<TokenId> BpeModel::find(std::string_view token) const {
  auto it = ids_.find(asAbsl(token));
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

void BpeModel::tokenize(std::string_view word, std::vector<TokenId>* out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (auto id = find(word)) {
      out->push_back(*id);
      return;
    }
  }
  bool cacheable = word.size() <= kMaxCachedWordBytes;
  if (cacheable) {
    absl::MutexLock lock(&cache_mu_);
    auto it = cache_.find(asAbsl(word));
    if (it != cache_.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  size_t start = out->size();
  mergeWord(word, out);
  if (cacheable) {
    absl::MutexLock lock(&cache_mu_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();
    cache_.try_emplace(std::string(word), out->begin() + start, out->end());
  }
}

void BpeModel::mergeWord(std::string_view word, std::vector<TokenId>* out) const {
  // a doubly linked list of symbols, merged lowest rank first and leftmost
  // first among equals (HF tokenizers' Word::merge_all).
  struct Symbol {
    TokenId id;
    int prev, next;
    bool alive;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  bool last_unk = false;
  for (size_t i = 0; i < word.size();) {
    size_t len = std::min(utf8CharLen(static_cast<unsigned char>(word[i])), word.size() - i);
    std::string_view ch = word.substr(i, len);
    i += len;
    if (auto id = find(ch)) {
      symbols.push_back({*id, 0, 0, true});
      last_unk = false;
      continue;
    }
    bool done = false;
    if (options_.byte_fallback) {
      std::vector<TokenId> bytes;
      for (char c : ch) {
        auto id = find(byteTokenName(static_cast<uint8_t>(c)));
        if (!id) break;
        bytes.push_back(*id);
      }
      if (bytes.size() == ch.size()) {
        for (TokenId id : bytes) symbols.push_back({id, 0, 0, true});
        last_unk = false;
        done = true;
      }
    }
    if (!done && options_.unk_id) {
      if (!(options_.fuse_unk && last_unk)) symbols.push_back({*options_.unk_id, 0, 0, true});
      last_unk = true;
    }
  }
  const int n = static_cast<int>(symbols.size());
  for (int i = 0; i < n; ++i) {
    symbols[i].prev = i - 1;
    symbols[i].next = i + 1 < n ? i + 1 : -1;
  }

  struct Candidate {
    int32_t rank;
    int pos;
    TokenId merged;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto consider = [&](int left) {
    if (left < 0) return;
    int right = symbols[left].next;
    if (right < 0) return;
    auto it = merges_.find(pairKey(symbols[left].id, symbols[right].id));
    if (it != merges_.end()) queue.push({it->second.rank, left, it->second.merged});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);

  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    // skip stale entries: the pair at this position has changed since
    auto it = merges_.find(pairKey(left.id, right.id));
    if (it == merges_.end() || it->second.merged != top.merged) continue;
    left.id = top.merged;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    consider(left.prev);
    consider(top.pos);
  }
  for (int i = n > 0 ? 0 : -1; i >= 0; i = symbols[i].next) out->push_back(symbols[i].id);
}

}  // namespace tandem::tokenizer
