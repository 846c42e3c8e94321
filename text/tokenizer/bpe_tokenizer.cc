#include "text/tokenizer/bpe_tokenizer.h"

#include <algorithm>

#include "absl/strings/str_replace.h"
#include "text/tokenizer/text_util.h"

namespace tandem::tokenizer {

BpeTokenizer::BpeTokenizer(std::unique_ptr<BpeModel> model, Normalizer normalizer,
                           PreTokenizer pre_tokenizer, AddedVocab added, Options options)
    : model_(std::move(model)),
      normalizer_(std::move(normalizer)),
      pre_tokenizer_(std::move(pre_tokenizer)),
      added_(std::move(added)),
      options_(std::move(options)) {
  vocab_size_ = model_->size();
  for (const AddedToken& t : added_.tokens()) vocab_size_ = std::max(vocab_size_, t.id + 1);
  max_input_bytes_per_token_ = computeMaxInputBytesPerToken();
}

size_t BpeTokenizer::computeMaxInputBytesPerToken() const {
  const size_t shrink = normalizer_.shrinkFactor();
  if (shrink == 0 || !pre_tokenizer_.keepsEveryByte()) return 0;
  size_t model = model_->maxBytesPerToken(pre_tokenizer_.endsByteLevel());
  if (model == 0) return 0;
  size_t raw = 0;  // added tokens matched in the raw input
  for (const AddedToken& t : added_.tokens()) {
    if (t.lstrip || t.rstrip) return 0;
    size_t& most = t.normalized ? model : raw;
    most = std::max(most, t.content.size());
  }
  return std::max(raw, shrink * model);
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<TokenId> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_special) ids = options_.prefix_ids;
  bool first = true;
  for (const Fragment& frag : added_.split(text, /*normalized=*/false)) {
    if (frag.isToken()) {
      ids.push_back(frag.token);
    } else {
      std::string normalized = normalizer_.apply(frag.text);
      if (!added_.hasNormalized()) {
        encodeNormalized(normalized, first, &ids);
      } else {
        for (const Fragment& sub : added_.split(normalized, /*normalized=*/true)) {
          if (sub.isToken()) {
            ids.push_back(sub.token);
          } else {
            encodeNormalized(sub.text, first, &ids);
          }
        }
      }
    }
    first = false;
  }
  if (add_special) ids.insert(ids.end(), options_.suffix_ids.begin(), options_.suffix_ids.end());
  return ids;
}

void BpeTokenizer::encodeNormalized(std::string_view text, bool first,
                                    std::vector<TokenId>* out) const {
  if (text.empty()) return;
  for (const std::string& piece : pre_tokenizer_.run(text, first)) model_->tokenize(piece, out);
}

std::string BpeTokenizer::decode(const std::vector<TokenId>& ids, bool skip_special) const {
  std::string out;
  for (TokenId id : ids) {
    if (skip_special && isSpecial(id)) continue;
    out += tokenBytes(id);
  }
  if (options_.strip_leading_space && !out.empty() && out[0] == ' ') out.erase(0, 1);
  return out;
}

std::string BpeTokenizer::tokenBytes(TokenId id) const {
  if (const AddedToken* added = added_.byId(id)) return added->content;
  if (id < 0 || id >= model_->size()) return "";
  const std::string& token = model_->token(id);
  switch (options_.decoding) {
    case Decoding::kByteLevel: {
      auto bytes = byteLevelDecode(token);
      return bytes ? *bytes : token;
    }
    case Decoding::kSentencePiece: {
      if (auto byte = parseByteToken(token)) return std::string(1, static_cast<char>(*byte));
      return absl::StrReplaceAll(token, {{"\xE2\x96\x81", " "}});
    }
    case Decoding::kRaw:
      break;
  }
  return token;
}

bool BpeTokenizer::isSpecial(TokenId id) const {
  const AddedToken* added = added_.byId(id);
  return added != nullptr && added->special;
}

std::optional<TokenId> BpeTokenizer::tokenToId(std::string_view token) const {
  if (const AddedToken* added = added_.byContent(token)) return added->id;
  return model_->find(token);
}

std::string BpeTokenizer::kind() const {
  return options_.decoding == Decoding::kSentencePiece ? "spm-bpe" : "bpe-byte-level";
}

}  // namespace tandem::tokenizer
