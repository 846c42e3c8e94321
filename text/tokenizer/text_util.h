// Small UTF-8 helpers shared by the tokenizers: walking characters, the
// GPT-2 byte <-> unicode map of byte-level BPE, and the <0xXX> byte tokens of
// SentencePiece vocabularies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/strings/string_view.h"

namespace tandem::tokenizer {

// this abseil build has its own string_view; hash-map lookups and StrCat
// need it spelled out.
inline absl::string_view asAbsl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

// the byte length of the UTF-8 character starting with `lead` (1 for a
// stray continuation or invalid byte, so a walk always advances).
size_t utf8CharLen(unsigned char lead);

// appends the UTF-8 encoding of code point `cp`.
void appendUtf8(uint32_t cp, std::string* out);

// maps every byte of `bytes` to its printable stand-in (GPT-2's
// bytes_to_unicode), as byte-level BPE vocabularies spell their tokens.
std::string byteLevelEncode(std::string_view bytes);

// reverses byteLevelEncode; nullopt when a character is not a stand-in.
std::optional<std::string> byteLevelDecode(std::string_view text);

// the byte of a "<0xXX>" token, if `token` is one.
std::optional<uint8_t> parseByteToken(std::string_view token);

// "<0xXX>" for `byte` (upper-case hex, as SentencePiece writes it).
std::string byteTokenName(uint8_t byte);

// the length of the longest prefix of `bytes` that does not end inside an
// unfinished (but so far valid) UTF-8 character.
size_t completeUtf8Prefix(std::string_view bytes);

// replaces each invalid UTF-8 sequence of `bytes` with U+FFFD.
std::string sanitizeUtf8(std::string_view bytes);

}  // namespace tandem::tokenizer
