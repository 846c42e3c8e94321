#include "text/tokenizer/hf_tokenizer_loader.h"

#include <filesystem>
#include <functional>

#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "nlohmann/json.hpp"
#include "text/tokenizer/bpe_tokenizer.h"

namespace tandem::tokenizer {
namespace {

using nlohmann::json;

// a token named in tokenizer_config.json: a string or {"content": ...}.
std::optional<std::string> configToken(const json& config, const char* key) {
  if (!config.contains(key)) return std::nullopt;
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  return std::nullopt;
}

absl::Status parseMerges(const json& list,
                         std::vector<std::pair<std::string, std::string>>* merges) {
  if (!list.is_array()) return absl::InvalidArgumentError("model.merges is not a list");
  merges->reserve(list.size());
  for (const json& m : list) {
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      size_t space = s.find(' ', 1);
      if (space == std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat("bad merge \"", s, "\""));
      }
      merges->emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges->emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return absl::InvalidArgumentError("a merge is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return absl::OkStatus();
}

absl::Status parseDecoder(const json& decoder, BpeTokenizer::Options* options) {
  options->decoding = BpeTokenizer::Decoding::kRaw;
  if (decoder.is_null()) return absl::OkStatus();
  std::vector<const json*> steps;
  if (decoder.value("type", "") == "Sequence" && decoder.contains("decoders") &&
      decoder["decoders"].is_array()) {
    for (const json& d : decoder["decoders"]) steps.push_back(&d);
  } else {
    steps.push_back(&decoder);
  }
  for (const json* d : steps) {
    const std::string type = d->value("type", "");
    if (type == "ByteLevel") {
      options->decoding = BpeTokenizer::Decoding::kByteLevel;
    } else if (type == "ByteFallback" || type == "Replace") {
      options->decoding = BpeTokenizer::Decoding::kSentencePiece;
    } else if (type == "Metaspace") {
      options->decoding = BpeTokenizer::Decoding::kSentencePiece;
      options->strip_leading_space = d->value("prepend_scheme", "always") != "never" &&
                                     d->value("add_prefix_space", true);
    } else if (type == "Strip") {
      options->strip_leading_space = d->value("start", 0) > 0 && d->value("content", "") == " ";
    } else if (type != "Fuse") {
      return absl::InvalidArgumentError(absl::StrCat("unsupported decoder type \"", type, "\""));
    }
  }
  return absl::OkStatus();
}

absl::Status parsePostProcessor(const json& pp, const std::function<std::optional<TokenId>(
                                                    const std::string&)>& lookup,
                                BpeTokenizer::Options* options) {
  if (pp.is_null()) return absl::OkStatus();
  const std::string type = pp.value("type", "");
  if (type == "Sequence") {
    for (const json& sub : pp.value("processors", json::array())) {
      RETURN_IF_ERROR(parsePostProcessor(sub, lookup, options));
    }
  } else if (type == "TemplateProcessing") {
    const json& specials = pp.value("special_tokens", json::object());
    bool after_sequence = false;
    for (const json& item : pp.value("single", json::array())) {
      if (item.contains("Sequence")) {
        after_sequence = true;
        continue;
      }
      if (!item.contains("SpecialToken")) continue;
      const std::string name = item["SpecialToken"].value("id", "");
      std::vector<TokenId> ids;
      if (specials.contains(name) && specials[name].contains("ids")) {
        for (const json& id : specials[name]["ids"]) ids.push_back(id.get<TokenId>());
      } else if (auto id = lookup(name)) {
        ids.push_back(*id);
      } else {
        return absl::InvalidArgumentError(absl::StrCat("template token \"", name, "\" is unknown"));
      }
      auto& target = after_sequence ? options->suffix_ids : options->prefix_ids;
      target.insert(target.end(), ids.begin(), ids.end());
    }
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    // {"cls": ["<s>", 0], "sep": ["</s>", 2]}
    const json& cls = pp.value("cls", json::array());
    const json& sep = pp.value("sep", json::array());
    if (cls.size() == 2) options->prefix_ids.push_back(cls[1].get<TokenId>());
    if (sep.size() == 2) options->suffix_ids.push_back(sep[1].get<TokenId>());
  } else if (type != "ByteLevel") {
    return absl::InvalidArgumentError(absl::StrCat("unsupported post_processor type \"", type, "\""));
  }
  return absl::OkStatus();
}

absl::StatusOr<TokenizerPtr> build(const json& root, const json& config) {
  if (!root.is_object() || !root.contains("model") || !root["model"].is_object()) {
    return absl::InvalidArgumentError("no \"model\" object");
  }
  const json& model = root["model"];
  const std::string type = model.value("type", model.contains("merges") ? "BPE" : "");
  if (type != "BPE") {
    return absl::InvalidArgumentError(
        absl::StrCat("unsupported tokenizer model type \"", type, "\" (only BPE is implemented)"));
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return absl::InvalidArgumentError("model.vocab is not an object");
  }
  std::vector<std::string> vocab;
  for (const auto& [token, id_json] : model["vocab"].items()) {
    if (!id_json.is_number_integer()) return absl::InvalidArgumentError("a vocab id is not an integer");
    auto id = id_json.get<int64_t>();
    if (id < 0 || id > (1 << 24)) return absl::InvalidArgumentError("a vocab id is out of range");
    if (static_cast<size_t>(id) >= vocab.size()) vocab.resize(id + 1);
    vocab[id] = token;
  }
  std::vector<std::pair<std::string, std::string>> merges;
  RETURN_IF_ERROR(parseMerges(model.value("merges", json::array()), &merges));

  BpeOptions bpe;
  bpe.byte_fallback = model.value("byte_fallback", false);
  bpe.ignore_merges = model.value("ignore_merges", false);
  bpe.fuse_unk = model.value("fuse_unk", false);
  auto model_ptr = std::make_unique<BpeModel>();
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    std::string unk = model["unk_token"].get<std::string>();
    for (size_t i = 0; i < vocab.size(); ++i) {
      if (vocab[i] == unk) bpe.unk_id = static_cast<TokenId>(i);
    }
  }
  RETURN_IF_ERROR(model_ptr->init(std::move(vocab), merges, bpe));

  AddedVocab added;
  for (const json& t : root.value("added_tokens", json::array())) {
    AddedToken token;
    token.id = t.value("id", -1);
    token.content = t.value("content", "");
    if (token.id < 0 || token.content.empty()) return absl::InvalidArgumentError("bad added token");
    token.special = t.value("special", false);
    token.lstrip = t.value("lstrip", false);
    token.rstrip = t.value("rstrip", false);
    token.single_word = t.value("single_word", false);
    token.normalized = t.value("normalized", !token.special);
    added.add(std::move(token));
  }
  auto lookup = [&](const std::string& s) -> std::optional<TokenId> {
    if (const AddedToken* t = added.byContent(s)) return t->id;
    return model_ptr->find(s);
  };

  ASSIGN_OR_RETURN(Normalizer normalizer, Normalizer::fromJson(root.value("normalizer", json())));
  ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::fromJson(root.value("pre_tokenizer", json())));
  BpeTokenizer::Options options;
  RETURN_IF_ERROR(parseDecoder(root.value("decoder", json()), &options));
  RETURN_IF_ERROR(parsePostProcessor(root.value("post_processor", json()), lookup, &options));
  // the post-processor's ids are the file's word: one outside the vocabulary
  // would be added to every prompt and fail it in the engine.
  for (const auto* ids : {&options.prefix_ids, &options.suffix_ids}) {
    for (TokenId id : *ids) {
      if (added.byId(id) == nullptr && (id < 0 || id >= model_ptr->size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "post_processor token id ", id, " is not in the vocabulary (", model_ptr->size(),
            " tokens and the added ones)"));
      }
    }
  }

  if (auto bos = configToken(config, "bos_token")) options.bos_id = lookup(*bos);
  if (auto eos = configToken(config, "eos_token")) options.eos_id = lookup(*eos);
  if (!options.bos_id && !options.prefix_ids.empty()) options.bos_id = options.prefix_ids.front();
  // transformers adds BOS when the config asks for it even if the
  // post-processor does not (Llama 3 files whose post-processor is plain
  // ByteLevel); with no add_bos_token, a declared bos_token is added the
  // same way, as llama.cpp does for these models.
  bool add_bos = config.contains("add_bos_token") && config["add_bos_token"].is_boolean()
                     ? config["add_bos_token"].get<bool>()
                     : options.prefix_ids.empty() && options.suffix_ids.empty();
  if (add_bos && options.bos_id && options.prefix_ids.empty()) {
    options.prefix_ids.push_back(*options.bos_id);
  }
  if (config.value("add_eos_token", false) && options.eos_id && options.suffix_ids.empty()) {
    options.suffix_ids.push_back(*options.eos_id);
  }
  return TokenizerPtr(new BpeTokenizer(std::move(model_ptr), std::move(normalizer), std::move(pre),
                                       std::move(added), std::move(options)));
}

}  // namespace

absl::StatusOr<TokenizerPtr> parseHfTokenizer(std::string_view tokenizer_json,
                                              std::string_view config_json,
                                              const std::string& name) {
  json root = json::parse(tokenizer_json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(name, ": invalid JSON"));
  json config = json::object();
  if (!config_json.empty()) {
    config = json::parse(config_json, nullptr, /*allow_exceptions=*/false);
    if (config.is_discarded() || !config.is_object()) config = json::object();
  }
  // json's typed getters throw on a wrong type; keep that inside.
  try {
    auto result = build(root, config);
    if (!result.ok()) {
      return absl::Status(result.status().code(), absl::StrCat(name, ": ", result.status().message()));
    }
    return result;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": malformed tokenizer: ", e.what()));
  }
}

absl::StatusOr<TokenizerPtr> loadHfTokenizer(const std::string& dir) {
  std::string path = (std::filesystem::path(dir) / "tokenizer.json").string();
  ASSIGN_OR_RETURN(std::string text, readFile(path));
  std::string config_path = (std::filesystem::path(dir) / "tokenizer_config.json").string();
  std::string config;
  if (std::filesystem::exists(config_path)) {
    ASSIGN_OR_RETURN(config, readFile(config_path));
  }
  return parseHfTokenizer(text, config, path);
}

}  // namespace tandem::tokenizer
