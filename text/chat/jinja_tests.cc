// jinja2's builtin tests (`x is defined`, `x is divisibleby 3`, ...).
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

}  // namespace

absl::StatusOr<bool> applyTest(const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "defined") return !v.isUndefined();
  if (name == "undefined") return v.isUndefined();
  if (name == "none") return v.isNone();
  if (name == "string") return v.isString();
  if (name == "number") return v.isNumber();
  if (name == "integer") return v.isInt();
  if (name == "float") return v.isFloat();
  if (name == "boolean") return v.isBool();
  if (name == "true") return v.isBool() && v.asBool();
  if (name == "false") return v.isBool() && !v.asBool();
  if (name == "mapping") return v.isDict();
  if (name == "iterable") return v.isString() || v.isSequenceLike() || v.isDict() || v.isUndefined();
  if (name == "sequence") return v.isString() || v.isSequenceLike() || v.isDict();
  if (name == "callable") return v.isFunction();
  if (name == "escaped") return false;
  if (name == "lower") return v.isString() && pyLower(v.str()) == v.str();
  if (name == "upper") return v.isString() && pyUpper(v.str()) == v.str();
  if (name == "odd" || name == "even") {
    ASSIGN_OR_RETURN(int64_t i, requireInt(v, name));
    bool odd = (i % 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "divisibleby") {
    ASSIGN_OR_RETURN(int64_t i, requireInt(v, name));
    ASSIGN_OR_RETURN(const Value* d, requireArg(args, name));
    ASSIGN_OR_RETURN(int64_t n, requireInt(*d, name));
    if (n == 0) return absl::InvalidArgumentError("integer division or modulo by zero");
    return i % n == 0;
  }
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas") {
    ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
    if (name == "sameas") return v.kind() == o->kind() && v.equals(*o);
    return v.equals(*o);
  }
  if (name == "ne" || name == "!=") {
    ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
    return !v.equals(*o);
  }
  if (name == "lt" || name == "<" || name == "lessthan") {
    ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
    return Value::less(v, *o);
  }
  if (name == "gt" || name == ">" || name == "greaterthan") {
    ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
    return Value::less(*o, v);
  }
  if (name == "le" || name == "<=") {
    ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
    ASSIGN_OR_RETURN(bool gt, Value::less(*o, v));
    return !gt;
  }
  if (name == "ge" || name == ">=") {
    ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
    ASSIGN_OR_RETURN(bool lt, Value::less(v, *o));
    return !lt;
  }
  if (name == "in") {
    ASSIGN_OR_RETURN(const Value* o, requireArg(args, name));
    return pyContains(*o, v);
  }
  return absl::InvalidArgumentError(absl::StrCat("no test named '", name, "'"));
}

}  // namespace tandem::chat
