// Building blocks of the JSON grammars json_schema_compiler.cc writes:
// the fixed rules of JSON's lexical syntax and the number-range and string
// format expressions. Internal to text/grammar.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tandem::grammar::json_rules {

// the largest magnitude of a bounded integer part (16 digits, as the
// grammar's unbounded numbers).
inline constexpr int64_t kMaxMagnitude = 9999999999999999;

// the definition (right-hand side) of a fixed rule: ws, value, object,
// member, array, string, char, number, int-part, frac, exp, integer,
// boolean, null, zero-frac, date, time, date-time, uuid, hex. nullopt for
// another name.
std::optional<std::string> fixedRule(std::string_view name);
// the fixed rules `name`'s definition refers to, space-separated.
std::string fixedRuleDeps(std::string_view name);

// a GBNF expression of the integers in [lo, hi] (|lo|, |hi| <= kMaxMagnitude).
std::string integerRange(int64_t lo, int64_t hi);
// a GBNF expression of the JSON numbers (no exponent) in [lo, hi], either
// bound absent; integer-valued bounds within kMaxMagnitude.
std::string numberRange(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace tandem::grammar::json_rules
