#include "text/chat/value.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "text/chat/unicode.h"

namespace tandem::chat {

const Value* ValueDict::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

Value* ValueDict::find(std::string_view key) {
  for (auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

void ValueDict::set(const std::string& key, Value value) {
  if (Value* v = find(key)) {
    *v = std::move(value);
  } else {
    items.emplace_back(key, std::move(value));
  }
}

const Value* CallArgs::get(size_t pos, std::string_view name) const {
  if (pos < args.size()) return &args[pos];
  for (const auto& [k, v] : kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::undefined(std::string name) {
  Value v;
  v.str_ = std::move(name);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::kList;
  v.list_ = std::make_shared<ValueList>(std::move(items));
  return v;
}

Value Value::tuple(ValueList items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::dict(ValueDict dict) {
  Value v;
  v.kind_ = Kind::kDict;
  v.dict_ = std::make_shared<ValueDict>(std::move(dict));
  return v;
}

Value Value::makeNamespace(ValueDict attrs) {
  Value v = dict(std::move(attrs));
  v.kind_ = Kind::kNamespace;
  return v;
}

bool Value::holdsNamespace(const Value& ns) const {
  if (!ns.isNamespace()) return false;
  // each container once: shared lists and dicts make a graph, not a tree.
  absl::flat_hash_set<const void*> seen;
  std::vector<const Value*> pending = {this};
  while (!pending.empty()) {
    const Value* v = pending.back();
    pending.pop_back();
    if (v->isSequenceLike()) {
      if (!seen.insert(v->list_.get()).second) continue;
      for (const Value& item : *v->list_) pending.push_back(&item);
    } else if (v->isDict() || v->isNamespace()) {
      if (v->dict_ == ns.dict_) return true;
      if (!seen.insert(v->dict_.get()).second) continue;
      for (const auto& [key, item] : v->dict_->items) pending.push_back(&item);
    }
  }
  return false;
}

Value Value::function(NativeFunction fn) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.fn_ = std::make_shared<NativeFunction>(std::move(fn));
  return v;
}

Value Value::fromJson(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Value(static_cast<double>(u));
      }
      return Value(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      ValueList items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(fromJson(e));
      return list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      ValueDict d;
      d.items.reserve(j.size());
      for (const auto& [k, e] : j.items()) d.items.emplace_back(k, fromJson(e));
      return dict(std::move(d));
    }
    default: return none();
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool:
    case Kind::kInt: return int_ != 0;
    case Kind::kFloat: return float_ != 0;
    case Kind::kString: return !str_.empty();
    case Kind::kList:
    case Kind::kTuple: return !list_->empty();
    case Kind::kDict: return !dict_->items.empty();
    case Kind::kNamespace:
    case Kind::kFunction: return true;
  }
  return false;
}

std::string formatPyFloat(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), f, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  int exp = std::stoi(sci.substr(e + 1));
  int decpt = exp + 1;
  std::string out = neg ? "-" : "";
  if (decpt > 16 || decpt < -3) {
    out += digits.substr(0, 1);
    if (digits.size() > 1) absl::StrAppend(&out, ".", digits.substr(1));
    absl::StrAppend(&out, absl::StrFormat("e%c%02d", exp < 0 ? '-' : '+', std::abs(exp)));
  } else if (decpt <= 0) {
    absl::StrAppend(&out, "0.", std::string(-decpt, '0'), digits);
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    absl::StrAppend(&out, digits, std::string(decpt - digits.size(), '0'), ".0");
  } else {
    absl::StrAppend(&out, digits.substr(0, decpt), ".", digits.substr(decpt));
  }
  return out;
}

std::string reprPyString(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : decodeUtf8(s)) {
    if (cp == static_cast<char32_t>(quote) || cp == '\\') {
      out.push_back('\\');
      out.push_back(static_cast<char>(cp));
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0)) {
      out += absl::StrFormat("\\x%02x", static_cast<unsigned>(cp));
    } else if (cp >= 0xDC80 && cp <= 0xDCFF) {
      out += absl::StrFormat("\\udc%02x", static_cast<unsigned>(cp - 0xDC00));
    } else {
      appendUtf8(out, cp);
    }
  }
  out.push_back(quote);
  return out;
}

std::string Value::toStr() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kString: return str_;
    default: return repr();
  }
}

std::string Value::repr() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return int_ ? "True" : "False";
    case Kind::kInt: return std::to_string(int_);
    case Kind::kFloat: return formatPyFloat(float_);
    case Kind::kString: return reprPyString(str_);
    case Kind::kList:
    case Kind::kTuple: {
      std::string out = isList() ? "[" : "(";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i) out += ", ";
        out += (*list_)[i].repr();
      }
      if (isTuple() && list_->size() == 1) out += ",";
      out += isList() ? "]" : ")";
      return out;
    }
    case Kind::kDict:
    case Kind::kNamespace: {
      std::string out = isNamespace() ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->items.size(); ++i) {
        if (i) out += ", ";
        absl::StrAppend(&out, reprPyString(dict_->items[i].first), ": ",
                        dict_->items[i].second.repr());
      }
      out += isNamespace() ? "}>" : "}";
      return out;
    }
    case Kind::kFunction: return "<function>";
  }
  return "";
}

std::string Value::typeName() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kFunction: return "function";
  }
  return "object";
}

bool Value::equals(const Value& other) const {
  if (isNumber() && other.isNumber()) {
    if (isFloat() || other.isFloat()) return asDouble() == other.asDouble();
    return int_ == other.int_;
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return str_ == other.str_;
    case Kind::kList:
    case Kind::kTuple: {
      if (list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].equals((*other.list_)[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_->items.size() != other.dict_->items.size()) return false;
      for (const auto& [k, v] : dict_->items) {
        const Value* o = other.dict_->find(k);
        if (o == nullptr || !v.equals(*o)) return false;
      }
      return true;
    }
    case Kind::kNamespace: return dict_ == other.dict_;
    case Kind::kFunction: return fn_ == other.fn_;
    default: return false;
  }
}

absl::StatusOr<bool> Value::less(const Value& a, const Value& b) {
  if (a.isNumber() && b.isNumber()) {
    if (a.isFloat() || b.isFloat()) return a.asDouble() < b.asDouble();
    return a.int_ < b.int_;
  }
  if (a.isString() && b.isString()) return a.str_ < b.str_;
  if (a.kind_ == b.kind_ && a.isSequenceLike()) {
    const ValueList& x = *a.list_;
    const ValueList& y = *b.list_;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (x[i].equals(y[i])) continue;
      return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  return absl::InvalidArgumentError(absl::StrCat("'<' not supported between instances of '",
                                                 a.typeName(), "' and '", b.typeName(), "'"));
}

absl::StatusOr<ValueList> iterateValue(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return ValueList{};
    case Value::Kind::kList:
    case Value::Kind::kTuple: return v.items();
    case Value::Kind::kDict: {
      ValueList keys;
      for (const auto& [k, _] : v.dictRef().items) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      ValueList chars;
      for (char32_t cp : decodeUtf8(v.str())) {
        std::string s;
        appendUtf8(s, cp);
        chars.emplace_back(std::move(s));
      }
      return chars;
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("'", v.typeName(), "' object is not iterable"));
  }
}


}  // namespace tandem::chat
