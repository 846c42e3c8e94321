// jinja2's builtin tests (`x is defined`, `x is divisibleby 3`, ...).
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "text/chat/builtins.h"
#include "text/chat/filters.h"
#include "text/chat/unicode.h"

namespace tandem::chat {
namespace {

absl::StatusOr<const Value*> requireArg(const CallArgs& args, const std::string& test) {
  const Value* v = args.get(0, "other");
  if (v == nullptr) v = args.get(0, "value");
  if (v == nullptr) return absl::InvalidArgumentError(absl::StrCat("test '", test, "' needs an argument"));
  return v;
}

absl::StatusOr<int64_t> requireInt(const Value& v, const std::string& test) {
  if (v.isInt() || v.isBool()) return v.asInt();
  if (v.isUndefined()) return absl::InvalidArgumentError(v.undefinedName());
  return absl::InvalidArgumentError(absl::StrCat("test '", test, "' needs an integer"));
}

// --- the tests, one function each; testTable() names them ---

using TestFn = absl::StatusOr<bool> (*)(const std::string& name, const Value& v, const CallArgs& args);

template <bool (Value::*kIs)() const>
absl::StatusOr<bool> kindTest(const std::string&, const Value& v, const CallArgs&) {
  return (v.*kIs)();
}

absl::StatusOr<bool> definedTest(const std::string&, const Value& v, const CallArgs&) { return !v.isUndefined(); }

template <bool kWant>
absl::StatusOr<bool> boolTest(const std::string&, const Value& v, const CallArgs&) {
  return v.isBool() && v.asBool() == kWant;
}

absl::StatusOr<bool> iterableTest(const std::string&, const Value& v, const CallArgs&) {
  return v.isString() || v.isSequenceLike() || v.isDict() || v.isUndefined();
}

absl::StatusOr<bool> sequenceTest(const std::string&, const Value& v, const CallArgs&) {
  return v.isString() || v.isSequenceLike() || v.isDict();
}

absl::StatusOr<bool> escapedTest(const std::string&, const Value&, const CallArgs&) { return false; }

absl::StatusOr<bool> lowerTest(const std::string&, const Value& v, const CallArgs&) {
  return v.isString() && pyLower(v.str()) == v.str();
}

absl::StatusOr<bool> upperTest(const std::string&, const Value& v, const CallArgs&) {
  return v.isString() && pyUpper(v.str()) == v.str();
}

template <bool kOdd>
absl::StatusOr<bool> parityTest(const std::string& name, const Value& v, const CallArgs&) {
  ASSIGN_OR_RETURN(int64_t i, requireInt(v, name));
  return ((i % 2) != 0) == kOdd;
}

absl::StatusOr<bool> divisiblebyTest(const std::string& name, const Value& v, const CallArgs& args) {
  ASSIGN_OR_RETURN(int64_t i, requireInt(v, name));
  ASSIGN_OR_RETURN(const Value* d, requireArg(args, name));
  ASSIGN_OR_RETURN(int64_t n, requireInt(*d, name));
  if (n == 0) return absl::InvalidArgumentError("integer division or modulo by zero");
  return i % n == 0;
}

absl::StatusOr<bool> equaltoTest(const std::string& name, const Value& v, const CallArgs& args) {
  ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
  return v.equals(*o);
}

absl::StatusOr<bool> sameasTest(const std::string& name, const Value& v, const CallArgs& args) {
  ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
  return v.kind() == o->kind() && v.equals(*o);
}

absl::StatusOr<bool> neTest(const std::string& name, const Value& v, const CallArgs& args) {
  ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
  return !v.equals(*o);
}

absl::StatusOr<bool> ltTest(const std::string& name, const Value& v, const CallArgs& args) {
  ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
  return Value::less(v, *o);
}

absl::StatusOr<bool> gtTest(const std::string& name, const Value& v, const CallArgs& args) {
  ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
  return Value::less(*o, v);
}

absl::StatusOr<bool> leTest(const std::string& name, const Value& v, const CallArgs& args) {
  ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
  ASSIGN_OR_RETURN(bool gt, Value::less(*o, v));
  return !gt;
}

absl::StatusOr<bool> geTest(const std::string& name, const Value& v, const CallArgs& args) {
  ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
  ASSIGN_OR_RETURN(bool lt, Value::less(v, *o));
  return !lt;
}

absl::StatusOr<bool> inTest(const std::string& name, const Value& v, const CallArgs& args) {
  ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
  return pyContains(*o, v);
}

// jinja2's builtin tests by name (aliases and operators share a function).
const absl::flat_hash_map<std::string_view, TestFn>& testTable() {
  static const auto* table = new absl::flat_hash_map<std::string_view, TestFn>{
      {"!=", neTest},
      {"<", ltTest},
      {"<=", leTest},
      {"==", equaltoTest},
      {">", gtTest},
      {">=", geTest},
      {"boolean", kindTest<&Value::isBool>},
      {"callable", kindTest<&Value::isFunction>},
      {"defined", definedTest},
      {"divisibleby", divisiblebyTest},
      {"eq", equaltoTest},
      {"equalto", equaltoTest},
      {"escaped", escapedTest},
      {"even", parityTest<false>},
      {"false", boolTest<false>},
      {"float", kindTest<&Value::isFloat>},
      {"ge", geTest},
      {"greaterthan", gtTest},
      {"gt", gtTest},
      {"in", inTest},
      {"integer", kindTest<&Value::isInt>},
      {"iterable", iterableTest},
      {"le", leTest},
      {"lessthan", ltTest},
      {"lower", lowerTest},
      {"lt", ltTest},
      {"mapping", kindTest<&Value::isDict>},
      {"ne", neTest},
      {"none", kindTest<&Value::isNone>},
      {"number", kindTest<&Value::isNumber>},
      {"odd", parityTest<true>},
      {"sameas", sameasTest},
      {"sequence", sequenceTest},
      {"string", kindTest<&Value::isString>},
      {"true", boolTest<true>},
      {"undefined", kindTest<&Value::isUndefined>},
      {"upper", upperTest},
  };
  return *table;
}

}  // namespace

absl::StatusOr<bool> applyTest(const std::string& name, const Value& v, const CallArgs& args) {
  const auto& table = testTable();
  if (auto it = table.find(name); it != table.end()) return it->second(name, v, args);
  return absl::InvalidArgumentError(absl::StrCat("no test named '", name, "'"));
}

}  // namespace tandem::chat
