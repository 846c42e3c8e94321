#include "text/tokenizer/gguf_tokenizer_loader.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "formats/gguf_file.h"
#include "text/tokenizer/bpe_tokenizer.h"
#include "text/tokenizer/split_regex.h"
#include "text/tokenizer/spm_tokenizer.h"
#include "text/tokenizer/text_util.h"

namespace tandem::tokenizer {
namespace {

std::optional<TokenId> optionalId(const model::GgufFile& gguf, std::string_view key) {
  auto v = gguf.getInt(key);
  if (!v.ok() || *v < 0) return std::nullopt;
  return static_cast<TokenId>(*v);
}

bool optionalBool(const model::GgufFile& gguf, std::string_view key, bool fallback) {
  auto v = gguf.getBool(key);
  return v.ok() ? *v : fallback;
}

struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<GgufTokenType> types;
  std::vector<float> scores;
};

absl::StatusOr<GgufVocab> readVocab(const model::GgufFile& gguf) {
  GgufVocab vocab;
  ASSIGN_OR_RETURN(auto tokens, gguf.getStringArray("tokenizer.ggml.tokens"));
  vocab.tokens.assign(tokens.begin(), tokens.end());
  if (auto types = gguf.getIntArray("tokenizer.ggml.token_type"); types.ok()) {
    if (types->size() != tokens.size()) {
      return absl::InvalidArgumentError("tokenizer.ggml.token_type and tokens differ in length");
    }
    for (int64_t t : *types) vocab.types.push_back(static_cast<GgufTokenType>(t));
  }
  if (auto scores = gguf.getFloatArray("tokenizer.ggml.scores"); scores.ok()) {
    if (scores->size() != tokens.size()) {
      return absl::InvalidArgumentError("tokenizer.ggml.scores and tokens differ in length");
    }
    vocab.scores.assign(scores->begin(), scores->end());
  }
  return vocab;
}

absl::StatusOr<TokenizerPtr> buildSpm(const model::GgufFile& gguf, GgufVocab vocab) {
  SpmTokenizer::Options options;
  options.bos_id = optionalId(gguf, "tokenizer.ggml.bos_token_id");
  options.eos_id = optionalId(gguf, "tokenizer.ggml.eos_token_id");
  options.unk_id = optionalId(gguf, "tokenizer.ggml.unknown_token_id");
  options.add_bos = optionalBool(gguf, "tokenizer.ggml.add_bos_token", true);
  options.add_eos = optionalBool(gguf, "tokenizer.ggml.add_eos_token", false);
  options.add_space_prefix = optionalBool(gguf, "tokenizer.ggml.add_space_prefix", true);
  return TokenizerPtr(new SpmTokenizer(std::move(vocab.tokens), std::move(vocab.scores),
                                       std::move(vocab.types), options));
}

absl::StatusOr<TokenizerPtr> buildGpt2(const model::GgufFile& gguf, GgufVocab vocab) {
  std::string pre = "default";
  if (auto v = gguf.getString("tokenizer.ggml.pre"); v.ok()) pre = std::string(*v);
  auto pattern = splitPatternForPre(pre);
  if (!pattern) {
    return absl::InvalidArgumentError(absl::StrCat("unsupported tokenizer.ggml.pre \"", pre, "\""));
  }
  ASSIGN_OR_RETURN(auto merge_strings, gguf.getStringArray("tokenizer.ggml.merges"));
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merge_strings.size());
  for (std::string_view m : merge_strings) {
    size_t space = m.find(' ', 1);
    if (space == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("bad merge \"", asAbsl(m), "\""));
    }
    merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }
  AddedVocab added;
  for (size_t i = 0; i < vocab.types.size(); ++i) {
    GgufTokenType t = vocab.types[i];
    if (t != GgufTokenType::kControl && t != GgufTokenType::kUserDefined) continue;
    AddedToken token;
    token.id = static_cast<TokenId>(i);
    token.content = vocab.tokens[i];
    token.special = t == GgufTokenType::kControl;
    added.add(std::move(token));
  }
  BpeOptions bpe;
  // llama.cpp takes whole pre-tokens found in the vocabulary for llama 3
  bpe.ignore_merges = pre == "llama3" || pre == "llama-bpe" || pre == "llama-v3";
  auto model_ptr = std::make_unique<BpeModel>();
  RETURN_IF_ERROR(model_ptr->init(std::move(vocab.tokens), merges, bpe));
  ASSIGN_OR_RETURN(PreTokenizer pre_tokenizer, PreTokenizer::byteLevel(*pattern));

  BpeTokenizer::Options options;
  options.decoding = BpeTokenizer::Decoding::kByteLevel;
  options.bos_id = optionalId(gguf, "tokenizer.ggml.bos_token_id");
  options.eos_id = optionalId(gguf, "tokenizer.ggml.eos_token_id");
  if (optionalBool(gguf, "tokenizer.ggml.add_bos_token", false) && options.bos_id) {
    options.prefix_ids.push_back(*options.bos_id);
  }
  if (optionalBool(gguf, "tokenizer.ggml.add_eos_token", false) && options.eos_id) {
    options.suffix_ids.push_back(*options.eos_id);
  }
  return TokenizerPtr(new BpeTokenizer(std::move(model_ptr), Normalizer(), std::move(pre_tokenizer),
                                       std::move(added), std::move(options)));
}

}  // namespace

std::optional<std::string_view> splitPatternForPre(std::string_view pre) {
  if (pre == "llama3" || pre == "llama-bpe" || pre == "llama-v3") return kLlama3Pattern;
  if (pre == "qwen2") return kQwen2Pattern;
  if (pre == "default" || pre == "gpt2" || pre == "gpt-2") return kGpt2Pattern;
  return std::nullopt;
}

absl::StatusOr<TokenizerPtr> loadGgufTokenizer(const model::GgufFile& gguf) {
  auto model = gguf.getString("tokenizer.ggml.model");
  if (!model.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(gguf.path(), ": no tokenizer.ggml.model"));
  }
  auto vocab = readVocab(gguf);
  if (!vocab.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(gguf.path(), ": ", vocab.status().message()));
  }
  absl::StatusOr<TokenizerPtr> result;
  if (*model == "llama") {
    result = buildSpm(gguf, std::move(*vocab));
  } else if (*model == "gpt2") {
    result = buildGpt2(gguf, std::move(*vocab));
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        gguf.path(), ": unsupported tokenizer.ggml.model \"", asAbsl(*model), "\" (llama and gpt2 are)"));
  }
  if (!result.ok()) {
    return absl::Status(result.status().code(),
                        absl::StrCat(gguf.path(), ": ", result.status().message()));
  }
  return result;
}

}  // namespace tandem::tokenizer
