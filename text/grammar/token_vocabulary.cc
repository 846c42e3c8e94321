#include "text/grammar/token_vocabulary.h"

#include <algorithm>

namespace tandem::grammar {

TokenVocabularyPtr TokenVocabulary::build(std::vector<std::string> token_bytes,
                                          const std::vector<bool>& excluded,
                                          std::vector<int32_t> eos_ids) {
  std::shared_ptr<TokenVocabulary> v(new TokenVocabulary());
  v->token_bytes_ = std::move(token_bytes);
  std::sort(eos_ids.begin(), eos_ids.end());
  eos_ids.erase(std::unique(eos_ids.begin(), eos_ids.end()), eos_ids.end());
  v->eos_ids_ = std::move(eos_ids);
  const auto n = static_cast<int32_t>(v->token_bytes_.size());
  for (int32_t id = 0; id < n; ++id) {
    const bool skip = v->token_bytes_[id].empty() ||
                      (id < static_cast<int32_t>(excluded.size()) && excluded[id]) || v->isEos(id);
    if (!skip) v->order_.push_back(id);
  }
  v->candidate_.assign(n, 0);
  for (int32_t id : v->order_) v->candidate_[id] = 1;
  const auto& bytes = v->token_bytes_;
  std::sort(v->order_.begin(), v->order_.end(), [&bytes](int32_t a, int32_t b) {
    return bytes[a] != bytes[b] ? bytes[a] < bytes[b] : a < b;
  });
  // preorder trie from the sorted tokens: each token shares the path of its
  // longest common prefix with the previous one.
  std::vector<TrieNode>& trie = v->trie_;
  trie.push_back({});
  std::vector<int32_t> path = {0};  // node index at each depth
  const std::string* prev = nullptr;
  for (size_t i = 0; i < v->order_.size(); ++i) {
    const std::string& s = bytes[v->order_[i]];
    v->max_bytes_ = std::max(v->max_bytes_, static_cast<int>(s.size()));
    size_t lcp = 0;
    if (prev != nullptr) {
      const size_t limit = std::min({prev->size(), s.size(), path.size() - 1});
      while (lcp < limit && (*prev)[lcp] == s[lcp]) ++lcp;
    }
    while (path.size() > lcp + 1) {
      trie[path.back()].end = static_cast<int32_t>(trie.size());
      path.pop_back();
    }
    for (size_t d = lcp; d < s.size(); ++d) {
      TrieNode node;
      node.byte = static_cast<uint8_t>(s[d]);
      node.depth = static_cast<uint16_t>(std::min<size_t>(d + 1, 0xFFFF));
      node.first = static_cast<int32_t>(i);
      path.push_back(static_cast<int32_t>(trie.size()));
      trie.push_back(node);
    }
    TrieNode& last = trie[path.back()];
    if (last.count == 0) last.first = static_cast<int32_t>(i);
    ++last.count;
    prev = &s;
  }
  while (!path.empty()) {
    trie[path.back()].end = static_cast<int32_t>(trie.size());
    path.pop_back();
  }
  return v;
}

TokenVocabularyPtr TokenVocabulary::fromTokenizer(const tokenizer::Tokenizer& tokenizer,
                                                  std::vector<int32_t> eos_ids) {
  const int n = tokenizer.vocabSize();
  std::vector<std::string> bytes(n);
  std::vector<bool> excluded(n, false);
  for (int id = 0; id < n; ++id) {
    excluded[id] = tokenizer.isSpecial(id);
    if (!excluded[id]) bytes[id] = tokenizer.tokenBytes(id);
  }
  return build(std::move(bytes), excluded, std::move(eos_ids));
}

bool TokenVocabulary::isEos(int32_t id) const {
  return std::binary_search(eos_ids_.begin(), eos_ids_.end(), id);
}

}  // namespace tandem::grammar
