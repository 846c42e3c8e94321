// The compiled form of a grammar: rules over BYTES. Every construct of the
// GBNF text (literals, code-point character classes, groups, repetitions)
// is lowered to alternatives of byte sets and rule references, so a matcher
// only ever steps one byte at a time (a class like [^"] becomes the UTF-8
// byte sequences of its code points, so output is always valid UTF-8).
//
// Layout (as llama.cpp's llama_grammar_element arrays): `elements` holds
// every alternative of every rule, each a sequence ending in a kEnd
// element; a rule lists where its alternatives start. A position is an
// index into `elements`. An empty alternative is a lone kEnd.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace tandem::grammar {

// a set of bytes, as four 64-bit words.
struct ByteSet {
  std::array<uint64_t, 4> words{};

  void add(uint8_t b) { words[b >> 6] |= uint64_t{1} << (b & 63); }
  void addRange(uint8_t lo, uint8_t hi) {
    for (int b = lo; b <= hi; ++b) add(static_cast<uint8_t>(b));
  }
  bool contains(uint8_t b) const { return (words[b >> 6] >> (b & 63)) & 1; }
  bool operator==(const ByteSet& other) const = default;
};

struct Element {
  enum class Kind : uint8_t {
    kBytes,  // one byte from byte_sets[arg]
    kRule,   // the rule rules[arg]
    kEnd,    // the end of an alternative
  };
  Kind kind = Kind::kEnd;
  uint32_t arg = 0;
};

struct Grammar {
  struct Rule {
    // as written in the grammar text; helper rules made for groups and
    // repetitions are named after their rule ("value_3").
    std::string name;
    // positions in `elements` where each alternative starts.
    std::vector<uint32_t> alternatives;
  };

  std::vector<Element> elements;
  std::vector<ByteSet> byte_sets;
  std::vector<Rule> rules;
  // the start rule.
  uint32_t root = 0;
};

}  // namespace tandem::grammar
