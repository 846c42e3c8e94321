// UTF-8 helpers that give std::string the code-point semantics of Python's
// str, which chat templates rely on for len(), slicing and strip().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::chat {

// decodes `s` into code points; invalid bytes decode as themselves so that
// encode(decode(s)) == s for any input.
std::vector<char32_t> decodeUtf8(std::string_view s);
std::string encodeUtf8(const std::vector<char32_t>& cps);
void appendUtf8(std::string& out, char32_t cp);

// str.isspace() for one code point.
bool isPySpace(char32_t cp);
// simple one-to-one case mappings (ascii, latin-1, greek, cyrillic).
char32_t toUpper(char32_t cp);
char32_t toLower(char32_t cp);
bool isAlpha(char32_t cp);

// python's str.strip/lstrip/rstrip; `chars` null means whitespace.
std::string pyStrip(std::string_view s, const std::string* chars, bool left, bool right);
std::string pyUpper(std::string_view s);
std::string pyLower(std::string_view s);
// str.title(): a letter after a non-letter is upper cased, the rest lowered.
std::string pyTitle(std::string_view s);
std::string pyCapitalize(std::string_view s);
// str.split() without a separator (runs of whitespace), at most maxsplit.
std::vector<std::string> pySplitWhitespace(std::string_view s, int64_t maxsplit);

}  // namespace tandem::chat
