// The value type of the template language: Python's object model reduced to
// what chat templates touch (None, bool, int, float, str, list, tuple, dict,
// jinja's namespace and Undefined, and callables).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace tandem::chat {

class Value;
using ValueList = std::vector<Value>;

// an insertion-ordered dict with string keys, as json objects give them.
struct ValueDict {
  std::vector<std::pair<std::string, Value>> items;

  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  void set(const std::string& key, Value value);
};

// positional and keyword arguments of a call.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;

  // the argument at `pos`, else the keyword `name`, else null.
  const Value* get(size_t pos, std::string_view name) const;
};

using NativeFunction = std::function<absl::StatusOr<Value>(const CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict,
                    kNamespace, kFunction };

  Value() = default;
  Value(bool b) : kind_(Kind::kBool), int_(b) {}
  Value(int64_t i) : kind_(Kind::kInt), int_(i) {}
  Value(int i) : kind_(Kind::kInt), int_(i) {}
  Value(double f) : kind_(Kind::kFloat), float_(f) {}
  Value(std::string s) : kind_(Kind::kString), str_(std::move(s)) {}
  Value(const char* s) : kind_(Kind::kString), str_(s) {}

  // `name` is what error messages call the missing thing.
  static Value undefined(std::string name = "");
  static Value none();
  static Value list(ValueList items);
  static Value tuple(ValueList items);
  static Value dict(ValueDict dict);
  static Value makeNamespace(ValueDict attrs);
  static Value function(NativeFunction fn);
  // keeps object key order; integers that overflow int64 become floats.
  static Value fromJson(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool isUndefined() const { return kind_ == Kind::kUndefined; }
  bool isNone() const { return kind_ == Kind::kNone; }
  bool isBool() const { return kind_ == Kind::kBool; }
  bool isInt() const { return kind_ == Kind::kInt; }
  bool isFloat() const { return kind_ == Kind::kFloat; }
  // python's numbers.Number: bool, int and float.
  bool isNumber() const { return isBool() || isInt() || isFloat(); }
  bool isString() const { return kind_ == Kind::kString; }
  bool isList() const { return kind_ == Kind::kList; }
  bool isTuple() const { return kind_ == Kind::kTuple; }
  bool isSequenceLike() const { return isList() || isTuple(); }
  bool isDict() const { return kind_ == Kind::kDict; }
  bool isNamespace() const { return kind_ == Kind::kNamespace; }
  bool isFunction() const { return kind_ == Kind::kFunction; }

  bool asBool() const { return int_ != 0; }
  int64_t asInt() const { return int_; }
  // numeric value of a bool, int or float.
  double asDouble() const { return isFloat() ? float_ : static_cast<double>(int_); }
  const std::string& str() const { return str_; }
  const std::string& undefinedName() const { return str_; }
  const ValueList& items() const { return *list_; }
  const ValueDict& dictRef() const { return *dict_; }
  // namespaces are the one mutable object a sandboxed template may change.
  ValueDict& mutableDict() const { return *dict_; }
  const NativeFunction& fn() const { return *fn_; }

  // python truthiness.
  bool truthy() const;
  // python str() of the value; undefined prints empty.
  std::string toStr() const;
  // python repr(), used for items inside printed containers.
  std::string repr() const;
  // python type name for error messages ('str', 'int', 'dict object').
  std::string typeName() const;

  // python ==; int 1 equals float 1.0 and True.
  bool equals(const Value& other) const;
  // whether this value is `ns`'s namespace or holds it, through lists,
  // tuples, dicts and namespaces: what a namespace attribute may not be set
  // to, since a namespace that holds itself is a reference cycle (its
  // memory never freed) and prints forever.
  bool holdsNamespace(const Value& ns) const;
  // python <, or InvalidArgument when the types are not ordered.
  static absl::StatusOr<bool> less(const Value& a, const Value& b);

 private:
  Kind kind_ = Kind::kUndefined;
  int64_t int_ = 0;
  double float_ = 0;
  std::string str_;
  std::shared_ptr<ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<NativeFunction> fn_;
};

// python's iter(): list items, dict keys, string characters; undefined is
// empty. Other kinds are InvalidArgument (not iterable).
absl::StatusOr<ValueList> iterateValue(const Value& v);

// python's repr() of a float ('1.0', '1e+16', '0.0001', 'inf').
std::string formatPyFloat(double f);
// python's repr() of a str.
std::string reprPyString(std::string_view s);

}  // namespace tandem::chat
