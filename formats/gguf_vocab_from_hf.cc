#include "formats/gguf_vocab_from_hf.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "formats/gguf_vocab_conventions.h"
#include "formats/gguf_writer.h"

namespace tandem::model {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr char kSpaceMarker[] = "\xE2\x96\x81";  // ▁, SentencePiece's space

absl::StatusOr<json> readJson(const fs::path& path) {
  ASSIGN_OR_RETURN(std::string text, readFile(path.string()));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": invalid JSON"));
  }
  return j;
}

// added tokens llama.cpp's converter marks control although HF does not call
// them special (does_token_look_special).
bool looksSpecial(const std::string& t) {
  return t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]" ||
         (t.starts_with("<|") && t.ends_with("|>")) ||
         (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>")) ||  // <｜ ｜>
         (t.starts_with("<unused") && t.ends_with(">"));
}

struct GgufVocab {
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::vector<float> scores;  // SentencePiece-style only
};

// the merges as (left, right) pairs, from "a b" strings or ["a", "b"] lists.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> readMerges(const json& list) {
  std::vector<std::pair<std::string, std::string>> merges;
  if (!list.is_array()) return merges;
  merges.reserve(list.size());
  for (const json& m : list) {
    if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      size_t space = s.find(' ', 1);
      if (space == std::string::npos) return absl::InvalidArgumentError(absl::StrCat("bad merge \"", s, "\""));
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return absl::InvalidArgumentError("a merge is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  return merges;
}

// every id in order; added tokens override the model vocab, as HF does.
absl::StatusOr<GgufVocab> collectTokens(const json& vocab, const json& added, int vocab_size,
                                        bool sentencepiece, int unk_id) {
  GgufVocab v;
  v.tokens.resize(vocab_size);
  v.types.assign(vocab_size, static_cast<int32_t>(GgufTokenKind::kUnused));
  std::vector<bool> known(vocab_size, false);
  auto place = [&](int64_t id, std::string text, GgufTokenKind kind) -> absl::Status {
    if (id < 0 || id >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("token id ", id, " is outside the vocab_size ", vocab_size));
    }
    v.tokens[id] = std::move(text);
    v.types[id] = static_cast<int32_t>(kind);
    known[id] = true;
    return absl::OkStatus();
  };
  for (const auto& [piece, id] : vocab.items()) {
    if (!id.is_number_integer()) return absl::InvalidArgumentError("a vocab id is not an integer");
    GgufTokenKind kind =
        sentencepiece && isByteTokenText(piece) ? GgufTokenKind::kByte : GgufTokenKind::kNormal;
    RETURN_IF_ERROR(place(id.get<int64_t>(), piece, kind));
  }
  for (const json& t : added) {
    if (!t.is_object() || !t.contains("id") || !t["id"].is_number_integer()) {
      return absl::InvalidArgumentError("an added token has no integer id");
    }
    std::string content = t.value("content", "");
    bool control = t.value("special", false) || looksSpecial(content);
    // llama.cpp matches user-defined tokens in raw text, where spaces are
    // still spaces (get_vocab_base pre-normalizes them the same way).
    if (!control && !sentencepiece) content = absl::StrReplaceAll(content, {{kSpaceMarker, " "}});
    RETURN_IF_ERROR(place(t["id"].get<int64_t>(), std::move(content),
                          control ? GgufTokenKind::kControl : GgufTokenKind::kUserDefined));
  }
  if (sentencepiece && unk_id >= 0 && unk_id < vocab_size) {
    v.types[unk_id] = static_cast<int32_t>(GgufTokenKind::kUnknown);
  }
  for (int i = 0; i < vocab_size; ++i) {
    if (!known[i]) v.tokens[i] = absl::StrCat("[PAD", i, "]");
  }
  return v;
}

// llama.cpp's SentencePiece tokenizer merges the adjacent pair whose joined
// text is the best-scoring token; the score -(rank of the first merge that
// makes a token) gives HF's merge order. Tokens no merge makes never join.
std::vector<float> spmScores(const GgufVocab& v,
                             const std::vector<std::pair<std::string, std::string>>& merges) {
  absl::flat_hash_map<std::string, int> ids;
  for (size_t i = 0; i < v.tokens.size(); ++i) ids[v.tokens[i]] = static_cast<int>(i);
  const float unmerged = -static_cast<float>(merges.size());
  std::vector<float> scores(v.tokens.size(), 0.0f);
  std::vector<bool> set(v.tokens.size(), false);
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.types[i] == static_cast<int32_t>(GgufTokenKind::kNormal)) scores[i] = unmerged;
  }
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    auto it = ids.find(merges[rank].first + merges[rank].second);
    if (it == ids.end() || set[it->second]) continue;
    scores[it->second] = -static_cast<float>(rank);
    set[it->second] = true;
  }
  return scores;
}

// the byte-level pre-tokenizer of a tokenizer.json, by its split regex.
absl::StatusOr<const BpePreTokenizer*> bytePre(const json& pre) {
  json steps = json::array();
  if (pre.is_object() && pre.value("type", "") == "Sequence") {
    steps = pre.value("pretokenizers", json::array());
  } else if (pre.is_object()) {
    steps.push_back(pre);
  }
  for (const json& step : steps) {
    const json* p = &step;
    const std::string type = p->value("type", "");
    if (type == "Split" && p->contains("pattern") && (*p)["pattern"].contains("Regex")) {
      const std::string regex = (*p)["pattern"]["Regex"].get<std::string>();
      if (const BpePreTokenizer* known = findBpePreByRegex(regex)) return known;
      return absl::UnimplementedError(
          absl::StrCat("no llama.cpp pre-tokenizer is known for the split regex \"", regex, "\""));
    }
    if (type == "ByteLevel" && p->value("use_regex", true)) return findBpePreByName("gpt-2");
  }
  return absl::UnimplementedError("a byte-level BPE tokenizer without a split regex");
}

// llama.cpp prepends a space when the tokenizer.json normalizer prepends ▁
// (or a Metaspace pre-tokenizer does).
bool addsSpacePrefix(const json& root) {
  bool found = false;
  auto visit = [&](const json& j, auto&& self) -> void {
    if (j.is_array()) {
      for (const json& e : j) self(e, self);
    } else if (j.is_object()) {
      std::string type = j.value("type", "");
      if (type == "Prepend" && j.value("prepend", "") == kSpaceMarker) found = true;
      if (type == "Metaspace" && j.value("prepend_scheme", "always") != "never" &&
          j.value("add_prefix_space", true)) {
        found = true;
      }
      for (const char* k : {"normalizers", "pretokenizers"}) {
        if (j.contains(k)) self(j[k], self);
      }
    }
  };
  visit(root.value("normalizer", json()), visit);
  visit(root.value("pre_tokenizer", json()), visit);
  return found;
}

// the special tokens the post-processor puts before and after the text.
void templateSpecials(const json& pp, std::vector<std::string>* prefix, std::vector<std::string>* suffix) {
  if (!pp.is_object()) return;
  if (pp.value("type", "") == "Sequence") {
    for (const json& sub : pp.value("processors", json::array())) templateSpecials(sub, prefix, suffix);
    return;
  }
  if (pp.value("type", "") != "TemplateProcessing") return;
  bool after = false;
  for (const json& item : pp.value("single", json::array())) {
    if (item.contains("Sequence")) after = true;
    else if (item.contains("SpecialToken")) (after ? suffix : prefix)->push_back(item["SpecialToken"].value("id", ""));
  }
}

void setChatTemplates(const json& config, GgufWriter* w) {
  const json tmpl = config.value("chat_template", json());
  if (tmpl.is_string()) {
    w->setString("tokenizer.chat_template", tmpl.get<std::string>());
    return;
  }
  if (!tmpl.is_array()) return;
  for (const json& t : tmpl) {  // [{"name": "default", "template": "..."}, ...]
    if (!t.is_object() || !t.contains("name") || !t.contains("template")) continue;
    std::string name = t["name"].get<std::string>();
    w->setString(name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name,
                 t["template"].get<std::string>());
  }
}

absl::Status addVocab(const json& root, const json& config, int vocab_size, GgufWriter* w) {
  const json model = root.value("model", json());
  if (!model.is_object() || model.value("type", "BPE") != "BPE" || !model.contains("vocab")) {
    return absl::UnimplementedError("only BPE tokenizer.json models can be converted to GGUF");
  }
  const json vocab = model["vocab"];
  const json added = root.value("added_tokens", json::array());
  const bool spm = model.value("byte_fallback", false);
  int unk = hfSpecialTokenId(config, "unk_token", vocab, added);
  if (unk < 0 && model.value("unk_token", json()).is_string()) {
    unk = hfSpecialTokenId(json{{"unk_token", model["unk_token"]}}, "unk_token", vocab, added);
  }
  ASSIGN_OR_RETURN(GgufVocab v, collectTokens(vocab, added, vocab_size, spm, unk));
  ASSIGN_OR_RETURN(auto merges, readMerges(model.value("merges", json::array())));
  if (spm) {
    w->setString("tokenizer.ggml.model", "llama");
    w->setString("tokenizer.ggml.pre", "default");
    w->setStringArray("tokenizer.ggml.tokens", v.tokens);
    w->setF32Array("tokenizer.ggml.scores", spmScores(v, merges));
    w->setI32Array("tokenizer.ggml.token_type", v.types);
  } else {
    ASSIGN_OR_RETURN(const BpePreTokenizer* pre, bytePre(root.value("pre_tokenizer", json())));
    std::vector<std::string> merge_strings;
    merge_strings.reserve(merges.size());
    for (const auto& [a, b] : merges) {
      // a space inside a part would split wrongly; llama.cpp's converter
      // writes it as U+0120, as byte-level BPE spells a space.
      merge_strings.push_back(absl::StrCat(absl::StrReplaceAll(a, {{" ", "\xC4\xA0"}}), " ",
                                           absl::StrReplaceAll(b, {{" ", "\xC4\xA0"}})));
    }
    w->setString("tokenizer.ggml.model", "gpt2");
    w->setString("tokenizer.ggml.pre", pre->name);
    w->setStringArray("tokenizer.ggml.tokens", v.tokens);
    w->setI32Array("tokenizer.ggml.token_type", v.types);
    w->setStringArray("tokenizer.ggml.merges", merge_strings);
  }
  const int bos = hfSpecialTokenId(config, "bos_token", vocab, added);
  const int eos = hfSpecialTokenId(config, "eos_token", vocab, added);
  if (bos >= 0) w->setU32("tokenizer.ggml.bos_token_id", bos);
  if (eos >= 0) w->setU32("tokenizer.ggml.eos_token_id", eos);
  if (unk >= 0) w->setU32("tokenizer.ggml.unknown_token_id", unk);
  if (int sep = hfSpecialTokenId(config, "sep_token", vocab, added); sep >= 0) {
    w->setU32("tokenizer.ggml.seperator_token_id", sep);  // sic, llama.cpp's key
  }
  if (int pad = hfSpecialTokenId(config, "pad_token", vocab, added); pad >= 0) {
    w->setU32("tokenizer.ggml.padding_token_id", pad);
  }
  // BOS as our HF loader adds it: from the post-processor's template, else
  // add_bos_token, else whenever a BOS is declared and nothing else is added.
  std::vector<std::string> prefix, suffix;
  templateSpecials(root.value("post_processor", json()), &prefix, &suffix);
  const json add_bos_cfg = config.value("add_bos_token", json());
  bool add_bos = suffix.empty();
  if (!prefix.empty()) add_bos = true;
  else if (add_bos_cfg.is_boolean()) add_bos = add_bos_cfg.get<bool>();
  bool add_eos = !suffix.empty() || config.value("add_eos_token", json()) == json(true);
  w->setBool("tokenizer.ggml.add_bos_token", add_bos && bos >= 0);
  w->setBool("tokenizer.ggml.add_eos_token", add_eos && eos >= 0);
  if (spm) w->setBool("tokenizer.ggml.add_space_prefix", addsSpacePrefix(root));
  setChatTemplates(config, w);
  return absl::OkStatus();
}

}  // namespace

int hfSpecialTokenId(const json& config, const char* key, const json& vocab, const json& added) {
  auto it = config.find(key);
  if (it == config.end()) return -1;
  std::string text;
  if (it->is_string()) text = it->get<std::string>();
  else if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    text = (*it)["content"].get<std::string>();
  if (text.empty()) return -1;
  if (added.is_array()) {
    for (const json& t : added) {
      if (t.is_object() && t.value("content", "") == text && t.contains("id") &&
          t["id"].is_number_integer()) {
        return t["id"].get<int>();
      }
    }
  }
  if (vocab.is_object() && vocab.contains(text) && vocab[text].is_number_integer()) {
    return vocab[text].get<int>();
  }
  return -1;
}

absl::Status addGgufVocabFromHf(const std::string& dir, int vocab_size, GgufWriter* w) {
  const fs::path tokenizer_path = fs::path(dir) / "tokenizer.json";
  ASSIGN_OR_RETURN(json root, readJson(tokenizer_path));
  json config = json::object();
  if (fs::path config_path = fs::path(dir) / "tokenizer_config.json"; fs::exists(config_path)) {
    ASSIGN_OR_RETURN(config, readJson(config_path));
  }
  absl::Status s;
  try {  // json's typed getters throw on a wrong type; keep that inside
    s = addVocab(root, config, vocab_size, w);
  } catch (const std::exception& e) {
    s = absl::InvalidArgumentError(e.what());
  }
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(tokenizer_path.string(), ": ", s.message()));
}

}  // namespace tandem::model
