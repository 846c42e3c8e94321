#include "server/model/synth_vocab.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "formats/gguf_vocab_from_hf.h"
#include "formats/gguf_writer.h"
#include "nlohmann/json.hpp"

namespace tandem::model {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr int kUnusedTokenType = 5;  // llama.cpp's LLAMA_TOKEN_TYPE_UNUSED

absl::StatusOr<SynthVocab> loadHfVocab(const std::string& dir) {
  SynthVocab v;
  v.kind = SynthVocab::Kind::kHfDir;
  v.source = dir;
  std::string path = (fs::path(dir) / "tokenizer.json").string();
  ASSIGN_OR_RETURN(std::string text, readFile(path));
  json tok = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (tok.is_discarded() || !tok.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": invalid JSON"));
  }
  json vocab = tok.contains("model") && tok["model"].is_object() ? tok["model"].value("vocab", json())
                                                                  : json();
  json added = tok.value("added_tokens", json::array());
  int max_id = -1;
  if (vocab.is_object()) {
    for (const auto& [piece, id] : vocab.items()) {
      if (id.is_number_integer()) max_id = std::max(max_id, id.get<int>());
    }
  }
  if (added.is_array()) {
    for (const json& t : added) {
      if (t.is_object() && t.contains("id") && t["id"].is_number_integer()) {
        max_id = std::max(max_id, t["id"].get<int>());
      }
    }
  }
  if (max_id < 0) return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  v.size = max_id + 1;
  std::string cfg_path = (fs::path(dir) / "tokenizer_config.json").string();
  if (fs::exists(cfg_path)) {
    ASSIGN_OR_RETURN(std::string cfg_text, readFile(cfg_path));
    json cfg = json::parse(cfg_text, nullptr, false);
    if (cfg.is_object()) {
      v.bos = hfSpecialTokenId(cfg, "bos_token", vocab, added);
      if (int eos = hfSpecialTokenId(cfg, "eos_token", vocab, added); eos >= 0) v.eos.push_back(eos);
    }
  }
  return v;
}

absl::StatusOr<SynthVocab> loadGgufVocab(const std::string& path) {
  SynthVocab v;
  v.kind = SynthVocab::Kind::kGguf;
  v.source = path;
  ASSIGN_OR_RETURN(v.gguf, GgufFile::open(path));
  ASSIGN_OR_RETURN(auto tokens, v.gguf->getStringArray("tokenizer.ggml.tokens"));
  if (tokens.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no tokens"));
  v.size = static_cast<int>(tokens.size());
  if (auto bos = v.gguf->getInt("tokenizer.ggml.bos_token_id"); bos.ok() && *bos < v.size) {
    v.bos = static_cast<int>(*bos);
  }
  if (auto eos = v.gguf->getInt("tokenizer.ggml.eos_token_id"); eos.ok() && *eos < v.size) {
    v.eos.push_back(static_cast<int>(*eos));
  }
  return v;
}

}  // namespace

absl::StatusOr<SynthVocab> loadSynthVocab(const std::string& path) {
  if (path.empty()) return SynthVocab{};
  std::error_code ec;
  if (fs::is_directory(path, ec)) return loadHfVocab(path);
  return loadGgufVocab(path);
}

absl::Status addGgufVocab(const SynthVocab& vocab, const ModelConfig& config, GgufWriter* w) {
  switch (vocab.kind) {
    case SynthVocab::Kind::kNone:
      w->setString("tokenizer.ggml.model", "no_vocab");
      return absl::OkStatus();
    case SynthVocab::Kind::kHfDir:
      return addGgufVocabFromHf(vocab.source, config.vocab_size, w);
    case SynthVocab::Kind::kGguf:
      break;
  }
  const int pad = config.vocab_size - vocab.size;
  for (const auto& [key, value] : vocab.gguf->metadata()) {
    if (!key.starts_with("tokenizer.")) continue;
    if (pad <= 0 || value.type != GgufType::kArray ||
        value.array.size() != static_cast<size_t>(vocab.size)) {
      w->setValue(key, value);
      continue;
    }
    // per-token arrays grow to the model's vocab with unused padding tokens.
    GgufValue padded = value;
    std::vector<std::string> names;  // keeps the padding strings alive
    names.reserve(pad);
    for (int i = 0; i < pad; ++i) {
      if (value.array_type == GgufType::kString) {
        names.push_back(absl::StrCat("[PAD", vocab.size + i, "]"));
        padded.array.emplace_back(std::string_view(names.back()));
      } else if (value.array_type == GgufType::kF32 || value.array_type == GgufType::kF64) {
        padded.array.emplace_back(-1000.0);
      } else {
        padded.array.emplace_back(int64_t{kUnusedTokenType});
      }
    }
    w->setValue(key, padded);
  }
  return absl::OkStatus();
}

}  // namespace tandem::model
