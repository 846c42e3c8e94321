// What llama.cpp's GGUF tokenizer keys mean, shared by the two vocabulary
// converters (HF tokenizer.json -> GGUF keys and back): token types, byte
// tokens, and which byte-level BPE split regex each tokenizer.ggml.pre names.
#pragma once

#include <cstdint>
#include <string_view>

namespace tandem::model {

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class GgufTokenKind : int32_t {
  kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

// a byte-fallback token, "<0x0A>".
inline bool isByteTokenText(std::string_view t) {
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') || (c >= 'a' && c <= 'f'); };
  return t.size() == 6 && t.substr(0, 3) == "<0x" && hex(t[3]) && hex(t[4]) && t[5] == '>';
}

// A byte-level BPE pre-tokenizer llama.cpp knows by name. The regexes are
// the exact strings HF tokenizer.json files carry; they repeat the ones in
// router/tokenizer/split_regex.h because the model library sits below the
// tokenizer library (the round-trip tests tie the two together).
struct BpePreTokenizer {
  std::string_view name;   // tokenizer.ggml.pre as llama.cpp's converter writes it
  std::string_view regex;  // HF Split pattern; for gpt-2 the one ByteLevel(use_regex) applies
  bool ignore_merges;      // a pre-token found whole in the vocab is taken as is
  bool split_before_byte_level;  // HF expresses it as Split + ByteLevel(use_regex=false)
};

inline constexpr BpePreTokenizer kBpePreTokenizers[] = {
    {"llama-bpe",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     true, true},
    {"qwen2",
     "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
     "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     false, true},
    {"gpt-2", "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
     false, false},
};

// the entry for a tokenizer.ggml.pre value, accepting the aliases llama.cpp
// accepts; nullptr when unknown.
inline const BpePreTokenizer* findBpePreByName(std::string_view pre) {
  if (pre == "llama3" || pre == "llama-v3") pre = "llama-bpe";
  if (pre == "default" || pre == "gpt2") pre = "gpt-2";
  for (const BpePreTokenizer& p : kBpePreTokenizers) {
    if (p.name == pre) return &p;
  }
  return nullptr;
}

// the entry whose Split regex is exactly `regex`; nullptr when unknown.
inline const BpePreTokenizer* findBpePreByRegex(std::string_view regex) {
  for (const BpePreTokenizer& p : kBpePreTokenizers) {
    if (p.split_before_byte_level && p.regex == regex) return &p;
  }
  return nullptr;
}

}  // namespace tandem::model
