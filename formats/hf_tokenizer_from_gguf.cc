#include "formats/hf_tokenizer_from_gguf.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/mapped_file.h"
#include "common/status.h"
#include "formats/gguf_file.h"
#include "formats/gguf_vocab_conventions.h"
#include "nlohmann/json.hpp"

namespace tandem::model {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

constexpr char kSentencePieceSpace[] = "\xE2\x96\x81";  // ▁

struct GgufVocabArrays {
  std::vector<std::string_view> tokens;
  std::vector<GgufTokenKind> types;
  std::vector<double> scores;
  int bos = -1, eos = -1, unk = -1;
  bool add_bos = false, add_eos = false;
};

int optionalId(const GgufFile& g, std::string_view key, int size) {
  auto v = g.getInt(key);
  return v.ok() && *v >= 0 && *v < size ? static_cast<int>(*v) : -1;
}

bool optionalBool(const GgufFile& g, std::string_view key, bool fallback) {
  auto v = g.getBool(key);
  return v.ok() ? *v : fallback;
}

absl::StatusOr<GgufVocabArrays> readVocab(const GgufFile& g, bool sentencepiece) {
  GgufVocabArrays v;
  ASSIGN_OR_RETURN(v.tokens, g.getStringArray("tokenizer.ggml.tokens"));
  const size_t n = v.tokens.size();
  v.types.assign(n, GgufTokenKind::kNormal);
  if (auto types = g.getIntArray("tokenizer.ggml.token_type"); types.ok()) {
    if (types->size() != n) return absl::InvalidArgumentError("token_type and tokens differ in length");
    for (size_t i = 0; i < n; ++i) v.types[i] = static_cast<GgufTokenKind>((*types)[i]);
  }
  v.scores.assign(n, 0.0);
  if (auto scores = g.getFloatArray("tokenizer.ggml.scores"); scores.ok()) {
    if (scores->size() != n) return absl::InvalidArgumentError("scores and tokens differ in length");
    v.scores = *scores;
  }
  const int size = static_cast<int>(n);
  v.bos = optionalId(g, "tokenizer.ggml.bos_token_id", size);
  v.eos = optionalId(g, "tokenizer.ggml.eos_token_id", size);
  v.unk = optionalId(g, "tokenizer.ggml.unknown_token_id", size);
  // the defaults of our GGUF tokenizer loader, so both read the same
  v.add_bos = optionalBool(g, "tokenizer.ggml.add_bos_token", sentencepiece);
  v.add_eos = optionalBool(g, "tokenizer.ggml.add_eos_token", false);
  return v;
}

// a JSON object of token -> id in id order. ordered_json looks every key
// up linearly on insert (minutes for 150k tokens), so the unique entries go
// straight into its underlying vector; a repeated token keeps its last id,
// as the tokenizers' vocab maps do.
ordered_json vocabObject(const GgufVocabArrays& v, bool (*include)(GgufTokenKind)) {
  absl::flat_hash_map<std::string_view, size_t> last;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (include(v.types[i])) last[v.tokens[i]] = i;
  }
  ordered_json obj = ordered_json::object();
  auto& items = static_cast<ordered_json::object_t::Container&>(obj.get_ref<ordered_json::object_t&>());
  items.reserve(last.size());
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    auto it = last.find(v.tokens[i]);
    if (it != last.end() && it->second == i) items.emplace_back(std::string(v.tokens[i]), i);
  }
  return obj;
}

bool isAdded(GgufTokenKind t) {
  return t == GgufTokenKind::kControl || t == GgufTokenKind::kUserDefined;
}

// transformers' SentencePieceExtractor: every split of a token into two
// vocabulary tokens (ordered by their ids), all of them ordered by the
// joined token's score, highest first, ties in vocabulary order.
ordered_json spmMerges(const GgufVocabArrays& v) {
  absl::flat_hash_map<std::string_view, int> ids;
  for (size_t i = 0; i < v.tokens.size(); ++i) ids[v.tokens[i]] = static_cast<int>(i);
  struct Merge {
    int left, right;
    double score;
  };
  std::vector<Merge> merges;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    std::string_view t = v.tokens[i];
    size_t first = merges.size();
    for (size_t k = 1; k < t.size(); ++k) {
      if ((static_cast<unsigned char>(t[k]) & 0xC0) == 0x80) continue;  // inside a character
      auto l = ids.find(t.substr(0, k)), r = ids.find(t.substr(k));
      if (l != ids.end() && r != ids.end()) merges.push_back({l->second, r->second, v.scores[i]});
    }
    std::sort(merges.begin() + first, merges.end(), [](const Merge& a, const Merge& b) {
      return std::pair(a.left, a.right) < std::pair(b.left, b.right);
    });
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.score > b.score; });
  ordered_json out = ordered_json::array();
  for (const Merge& m : merges) out.push_back({v.tokens[m.left], v.tokens[m.right]});
  return out;
}

ordered_json addedTokens(const GgufVocabArrays& v) {
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    bool unk = static_cast<int>(i) == v.unk;
    if (!isAdded(v.types[i]) && !unk) continue;
    out.push_back({{"id", i},
                   {"content", v.tokens[i]},
                   {"single_word", false},
                   {"lstrip", false},
                   {"rstrip", false},
                   {"normalized", false},
                   {"special", v.types[i] != GgufTokenKind::kUserDefined}});
  }
  return out;
}

// BOS and/or EOS around the text, as HF's TemplateProcessing writes them.
ordered_json postProcessor(const GgufVocabArrays& v) {
  const bool bos = v.add_bos && v.bos >= 0, eos = v.add_eos && v.eos >= 0;
  if (!bos && !eos) return nullptr;
  auto special = [&](int id, int type_id) {
    return ordered_json{{"SpecialToken", {{"id", v.tokens[id]}, {"type_id", type_id}}}};
  };
  auto sequence = [](const char* id, int type_id) {
    return ordered_json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
  };
  ordered_json single = ordered_json::array(), pair = ordered_json::array();
  ordered_json specials = ordered_json::object();
  for (int type_id : {0, 1}) {
    ordered_json& out = type_id == 0 ? single : pair;
    if (bos) out.push_back(special(v.bos, type_id));
    out.push_back(sequence(type_id == 0 ? "A" : "B", type_id));
    if (eos) out.push_back(special(v.eos, type_id));
  }
  pair.insert(pair.begin(), single.begin(), single.end());
  for (int id : {bos ? v.bos : -1, eos ? v.eos : -1}) {
    if (id < 0) continue;
    specials[std::string(v.tokens[id])] = {{"id", v.tokens[id]}, {"ids", {id}}, {"tokens", {v.tokens[id]}}};
  }
  return {{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair}, {"special_tokens", specials}};
}

ordered_json spmTokenizer(const GgufFile& g, const GgufVocabArrays& v) {
  const bool prefix = optionalBool(g, "tokenizer.ggml.add_space_prefix", true);
  ordered_json normalizers = ordered_json::array();
  if (prefix) normalizers.push_back({{"type", "Prepend"}, {"prepend", kSentencePieceSpace}});
  normalizers.push_back({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", kSentencePieceSpace}});
  ordered_json decoders = {{{"type", "Replace"}, {"pattern", {{"String", kSentencePieceSpace}}}, {"content", " "}},
                           {{"type", "ByteFallback"}},
                           {{"type", "Fuse"}}};
  if (prefix) decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  ordered_json vocab = vocabObject(v, [](GgufTokenKind) { return true; });
  return {{"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
          {"pre_tokenizer", nullptr},
          {"post_processor", postProcessor(v)},
          {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
          {"model", {{"type", "BPE"}, {"dropout", nullptr},
                     {"unk_token", v.unk >= 0 ? ordered_json(v.tokens[v.unk]) : ordered_json()},
                     {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                     {"fuse_unk", true}, {"byte_fallback", true}, {"ignore_merges", false},
                     {"vocab", vocab}, {"merges", spmMerges(v)}}}};
}

absl::StatusOr<ordered_json> byteLevelTokenizer(const GgufFile& g, const GgufVocabArrays& v) {
  std::string pre_name = "default";
  if (auto p = g.getString("tokenizer.ggml.pre"); p.ok()) pre_name = std::string(*p);
  const BpePreTokenizer* pre = findBpePreByName(pre_name);
  if (pre == nullptr) {
    return absl::UnimplementedError(absl::StrCat("tokenizer.ggml.pre \"", pre_name, "\" has no known split regex"));
  }
  ordered_json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                             {"use_regex", !pre->split_before_byte_level}};
  ordered_json pre_tokenizer = byte_level;
  if (pre->split_before_byte_level) {
    ordered_json split = {{"type", "Split"}, {"pattern", {{"Regex", pre->regex}}},
                          {"behavior", "Isolated"}, {"invert", false}};
    pre_tokenizer = {{"type", "Sequence"}, {"pretokenizers", {split, byte_level}}};
  }
  ordered_json post = postProcessor(v);
  if (post.is_null()) {
    post = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}};
  }
  ASSIGN_OR_RETURN(auto merge_strings, g.getStringArray("tokenizer.ggml.merges"));
  ordered_json merges = ordered_json::array();
  for (std::string_view m : merge_strings) {
    size_t space = m.find(' ', 1);
    if (space == std::string_view::npos) return absl::InvalidArgumentError(absl::StrCat("bad merge \"", std::string(m), "\""));
    merges.push_back({m.substr(0, space), m.substr(space + 1)});
  }
  // control and user-defined tokens live only among the added tokens, as in
  // the HF files llama.cpp converts from.
  ordered_json vocab = vocabObject(v, [](GgufTokenKind t) { return !isAdded(t); });
  return ordered_json{{"normalizer", nullptr},
                      {"pre_tokenizer", pre_tokenizer},
                      {"post_processor", post},
                      {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true},
                                   {"trim_offsets", true}, {"use_regex", true}}},
                      {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                                 {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
                                 {"fuse_unk", false}, {"byte_fallback", false},
                                 {"ignore_merges", pre->ignore_merges}, {"vocab", vocab},
                                 {"merges", merges}}}};
}

ordered_json tokenizerConfig(const GgufFile& g, const GgufVocabArrays& v, bool sentencepiece) {
  ordered_json c = {{"add_bos_token", v.add_bos}, {"add_eos_token", v.add_eos}};
  auto name = [&](int id) { return id >= 0 ? ordered_json(v.tokens[id]) : ordered_json(); };
  c["bos_token"] = name(v.bos);
  c["eos_token"] = name(v.eos);
  c["unk_token"] = name(v.unk);
  c["clean_up_tokenization_spaces"] = false;
  if (sentencepiece) c["legacy"] = true;
  c["tokenizer_class"] = sentencepiece ? "LlamaTokenizerFast" : "PreTrainedTokenizerFast";
  if (auto t = g.getString("tokenizer.chat_template"); t.ok()) c["chat_template"] = *t;
  return c;
}

absl::Status writeJson(const fs::path& path, const ordered_json& j) {
  std::string text;
  try {  // dump throws on a token that is not valid UTF-8
    text = j.dump(2) + "\n";
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": ", e.what()));
  }
  return writeFile(path.string(), text);
}

}  // namespace

absl::Status writeHfTokenizerFromGguf(const GgufFile& g, const std::string& dir) {
  auto fail = [&](const absl::Status& s) {
    return absl::Status(s.code(), absl::StrCat(g.path(), ": ", s.message()));
  };
  auto model = g.getString("tokenizer.ggml.model");
  if (!model.ok()) return fail(model.status());
  const bool spm = *model == "llama";
  if (!spm && *model != "gpt2") {
    return fail(absl::UnimplementedError(absl::StrCat(
        "tokenizer.ggml.model \"", std::string(*model), "\" cannot be written as tokenizer.json (llama and gpt2 can)")));
  }
  auto vocab = readVocab(g, spm);
  if (!vocab.ok()) return fail(vocab.status());
  ordered_json body;
  if (spm) {
    body = spmTokenizer(g, *vocab);
  } else {
    auto b = byteLevelTokenizer(g, *vocab);
    if (!b.ok()) return fail(b.status());
    body = std::move(*b);
  }
  ordered_json root = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr},
                       {"added_tokens", addedTokens(*vocab)}};
  root.update(body);
  RETURN_IF_ERROR(writeJson(fs::path(dir) / "tokenizer.json", root));
  return writeJson(fs::path(dir) / "tokenizer_config.json", tokenizerConfig(g, *vocab, spm));
}

}  // namespace tandem::model
