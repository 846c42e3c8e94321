#include "text/chat/builtins.h"

#include <ctime>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "text/chat/unicode.h"

namespace tandem::chat {
namespace {

absl::Status typeError(const std::string& msg) { return absl::InvalidArgumentError(msg); }

absl::StatusOr<std::string> stringArg(const CallArgs& args, size_t pos, const char* name,
                                      const char* method) {
  const Value* v = args.get(pos, name);
  if (v == nullptr || !v->isString()) {
    return typeError(absl::StrCat(method, "() argument must be str"));
  }
  return v->str();
}

int64_t intArg(const CallArgs& args, size_t pos, const char* name, int64_t def) {
  const Value* v = args.get(pos, name);
  if (v == nullptr || !(v->isInt() || v->isBool())) return def;
  return v->asInt();
}

ValueList toStrings(const std::vector<std::string>& parts) {
  ValueList out;
  for (const auto& p : parts) out.emplace_back(p);
  return out;
}

std::vector<std::string> splitBy(const std::string& s, const std::string& sep, int64_t maxsplit,
                                 bool from_right) {
  std::vector<std::string> out;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t at = s.find(sep, start);
      if (at == std::string::npos) break;
      out.push_back(s.substr(start, at - start));
      start = at + sep.size();
    }
    out.push_back(s.substr(start));
    return out;
  }
  size_t end = s.size();
  std::vector<std::string> rev;
  while (maxsplit < 0 || static_cast<int64_t>(rev.size()) < maxsplit) {
    if (end < sep.size()) break;
    size_t at = s.rfind(sep, end - sep.size());
    if (at == std::string::npos) break;
    rev.push_back(s.substr(at + sep.size(), end - at - sep.size()));
    end = at;
  }
  rev.push_back(s.substr(0, end));
  return std::vector<std::string>(rev.rbegin(), rev.rend());
}

absl::StatusOr<bool> affix(const std::string& s, const Value& arg, bool prefix) {
  auto test = [&](const std::string& a) {
    if (a.size() > s.size()) return false;
    return prefix ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0;
  };
  if (arg.isString()) return test(arg.str());
  if (arg.isTuple() || arg.isList()) {
    for (const Value& a : arg.items()) {
      if (a.isString() && test(a.str())) return true;
    }
    return false;
  }
  return typeError(absl::StrCat(prefix ? "startswith" : "endswith",
                                " first arg must be str or a tuple of str"));
}

std::string replaceAll(const std::string& s, const std::string& old, const std::string& rep,
                       int64_t count) {
  std::string out;
  if (old.empty()) {
    std::vector<char32_t> cps = decodeUtf8(s);
    int64_t done = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += rep;
        ++done;
      }
      if (i < cps.size()) appendUtf8(out, cps[i]);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(old, start);
    if (at == std::string::npos) break;
    out.append(s, start, at - start);
    out += rep;
    start = at + old.size();
    ++done;
  }
  out.append(s, start, std::string::npos);
  return out;
}

// byte offset -> code point index, for find().
int64_t codePointIndex(const std::string& s, size_t byte) {
  return static_cast<int64_t>(decodeUtf8(std::string_view(s).substr(0, byte)).size());
}

template <typename Pred>
bool allCodePoints(const std::string& s, Pred pred) {
  std::vector<char32_t> cps = decodeUtf8(s);
  if (cps.empty()) return false;
  for (char32_t c : cps) {
    if (!pred(c)) return false;
  }
  return true;
}

// --- str methods, one function each; stringMethodTable() names them ---

using StringMethodFn = absl::StatusOr<Value> (*)(const std::string& name, const std::string& s,
                                                 const CallArgs& args);

absl::StatusOr<Value> stripMethod(const std::string& name, const std::string& s, const CallArgs& args) {
  const Value* chars = args.get(0, "chars");
  const std::string* set = chars != nullptr && chars->isString() ? &chars->str() : nullptr;
  return Value(pyStrip(s, set, name != "rstrip", name != "lstrip"));
}

absl::StatusOr<Value> affixMethod(const std::string& name, const std::string& s, const CallArgs& args) {
  const Value* a = args.get(0, "prefix");
  if (a == nullptr) return typeError(absl::StrCat(name, "() takes at least 1 argument"));
  ASSIGN_OR_RETURN(bool r, affix(s, *a, name == "startswith"));
  return Value(r);
}

absl::StatusOr<Value> splitMethod(const std::string& name, const std::string& s, const CallArgs& args) {
  const Value* sep = args.get(0, "sep");
  int64_t maxsplit = intArg(args, 1, "maxsplit", -1);
  if (sep == nullptr || sep->isNone()) {
    if (name == "rsplit" && maxsplit >= 0) return typeError("rsplit() without sep is unsupported with maxsplit");
    return Value::list(toStrings(pySplitWhitespace(s, maxsplit)));
  }
  if (!sep->isString()) return typeError("must be str or None");
  if (sep->str().empty()) return typeError("empty separator");
  return Value::list(toStrings(splitBy(s, sep->str(), maxsplit, name == "rsplit")));
}

absl::StatusOr<Value> splitlinesMethod(const std::string&, const std::string& s, const CallArgs&) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  if (start < s.size()) lines.push_back(s.substr(start));
  return Value::list(toStrings(lines));
}

template <std::string (*kConvert)(std::string_view)>
absl::StatusOr<Value> caseMethod(const std::string&, const std::string& s, const CallArgs&) {
  return Value(kConvert(s));
}

absl::StatusOr<Value> replaceMethod(const std::string&, const std::string& s, const CallArgs& args) {
  ASSIGN_OR_RETURN(std::string old, stringArg(args, 0, "old", "replace"));
  ASSIGN_OR_RETURN(std::string rep, stringArg(args, 1, "new", "replace"));
  return Value(replaceAll(s, old, rep, intArg(args, 2, "count", -1)));
}

// find, rfind and count
absl::StatusOr<Value> findMethod(const std::string& name, const std::string& s, const CallArgs& args) {
  ASSIGN_OR_RETURN(std::string sub, stringArg(args, 0, "sub", name.c_str()));
  if (name == "count") {
    if (sub.empty()) return Value(static_cast<int64_t>(decodeUtf8(s).size() + 1));
    int64_t n = 0;
    for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    return Value(n);
  }
  size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
  return Value(at == std::string::npos ? int64_t{-1} : codePointIndex(s, at));
}

absl::StatusOr<Value> joinMethod(const std::string&, const std::string& s, const CallArgs& args) {
  const Value* items = args.get(0, "iterable");
  if (items == nullptr) return typeError("join() takes exactly one argument");
  ASSIGN_OR_RETURN(ValueList parts, iterateValue(*items));
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].isString()) {
      return typeError(absl::StrCat("sequence item ", i, ": expected str instance, ",
                                    parts[i].typeName(), " found"));
    }
    if (i) out += s;
    out += parts[i].str();
  }
  return Value(std::move(out));
}

absl::StatusOr<Value> formatMethod(const std::string&, const std::string& s, const CallArgs& args) {
  return pyStrFormat(s, args);
}

bool isDigit(char32_t c) { return c >= '0' && c <= '9'; }
bool isAlnum(char32_t c) { return isAlpha(c) || isDigit(c); }

template <bool (*kPred)(char32_t)>
absl::StatusOr<Value> allCodePointsMethod(const std::string&, const std::string& s, const CallArgs&) {
  return Value(allCodePoints(s, kPred));
}

// isupper and islower
absl::StatusOr<Value> casedMethod(const std::string& name, const std::string& s, const CallArgs&) {
  bool upper = name == "isupper";
  bool cased = false;
  for (char32_t c : decodeUtf8(s)) {
    if (toUpper(c) != toLower(c)) {
      cased = true;
      if ((upper ? toUpper(c) : toLower(c)) != c) return Value(false);
    }
  }
  return Value(cased);
}

const absl::flat_hash_map<std::string_view, StringMethodFn>& stringMethodTable() {
  static const auto* table = new absl::flat_hash_map<std::string_view, StringMethodFn>{
      {"capitalize", caseMethod<pyCapitalize>},
      {"count", findMethod},
      {"endswith", affixMethod},
      {"find", findMethod},
      {"format", formatMethod},
      {"isalnum", allCodePointsMethod<isAlnum>},
      {"isalpha", allCodePointsMethod<isAlpha>},
      {"isdigit", allCodePointsMethod<isDigit>},
      {"islower", casedMethod},
      {"isspace", allCodePointsMethod<isPySpace>},
      {"isupper", casedMethod},
      {"join", joinMethod},
      {"lower", caseMethod<pyLower>},
      {"lstrip", stripMethod},
      {"replace", replaceMethod},
      {"rfind", findMethod},
      {"rsplit", splitMethod},
      {"rstrip", stripMethod},
      {"split", splitMethod},
      {"splitlines", splitlinesMethod},
      {"startswith", affixMethod},
      {"strip", stripMethod},
      {"title", caseMethod<pyTitle>},
      {"upper", caseMethod<pyUpper>},
  };
  return *table;
}

// --- dict methods ---

using DictMethodFn = absl::StatusOr<Value> (*)(const ValueDict& d, const CallArgs& args);

absl::StatusOr<Value> itemsMethod(const ValueDict& d, const CallArgs&) {
  ValueList out;
  for (const auto& [k, v] : d.items) out.push_back(Value::tuple({Value(k), v}));
  return Value::list(std::move(out));
}

absl::StatusOr<Value> keysMethod(const ValueDict& d, const CallArgs&) {
  ValueList out;
  for (const auto& [k, v] : d.items) out.push_back(Value(k));
  return Value::list(std::move(out));
}

absl::StatusOr<Value> valuesMethod(const ValueDict& d, const CallArgs&) {
  ValueList out;
  for (const auto& [k, v] : d.items) out.push_back(v);
  return Value::list(std::move(out));
}

absl::StatusOr<Value> getMethod(const ValueDict& d, const CallArgs& args) {
  const Value* key = args.get(0, "key");
  if (key == nullptr) return typeError("get expected at least 1 argument");
  const Value* def = args.get(1, "default");
  if (key->isString()) {
    if (const Value* v = d.find(key->str())) return *v;
  }
  return def != nullptr ? *def : Value::none();
}

const absl::flat_hash_map<std::string_view, DictMethodFn>& dictMethodTable() {
  static const auto* table = new absl::flat_hash_map<std::string_view, DictMethodFn>{
      {"get", getMethod},
      {"items", itemsMethod},
      {"keys", keysMethod},
      {"values", valuesMethod},
  };
  return *table;
}

absl::StatusOr<Value> range(const CallArgs& args) {
  if (args.args.empty() || args.args.size() > 3) return typeError("range expected 1 to 3 arguments");
  for (const Value& a : args.args) {
    if (!(a.isInt() || a.isBool())) {
      return typeError(absl::StrCat("'", a.typeName(), "' object cannot be interpreted as an integer"));
    }
  }
  int64_t start = 0, stop, step = 1;
  if (args.args.size() == 1) {
    stop = args.args[0].asInt();
  } else {
    start = args.args[0].asInt();
    stop = args.args[1].asInt();
    if (args.args.size() == 3) step = args.args[2].asInt();
  }
  if (step == 0) return typeError("range() arg 3 must not be zero");
  ValueList out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    // jinja's sandbox caps ranges at 100000 items
    if (out.size() >= 100000) return typeError("range too big, maximum size for range is 100000");
    out.emplace_back(i);
  }
  return Value::list(std::move(out));
}

ValueDict kwargsDict(const CallArgs& args) {
  ValueDict d;
  for (const Value& a : args.args) {
    if (a.isDict() || a.isNamespace()) {
      for (const auto& [k, v] : a.dictRef().items) d.set(k, v);
    }
  }
  for (const auto& [k, v] : args.kwargs) d.set(k, v);
  return d;
}

}  // namespace

bool hasMethod(const Value& obj, const std::string& name) {
  if (obj.isString()) return stringMethodTable().contains(name);
  if (obj.isDict()) return dictMethodTable().contains(name);
  return false;
}

absl::StatusOr<Value> callMethod(const Value& obj, const std::string& name, const CallArgs& args) {
  if (obj.isString()) {
    const auto& table = stringMethodTable();
    if (auto it = table.find(name); it != table.end()) return it->second(name, obj.str(), args);
    return typeError(absl::StrCat("'str' object has no attribute '", name, "'"));
  }
  if (obj.isDict()) {
    const auto& table = dictMethodTable();
    if (auto it = table.find(name); it != table.end()) return it->second(obj.dictRef(), args);
  }
  return typeError(absl::StrCat("'", obj.typeName(), "' object has no attribute '", name, "'"));
}

ValueDict makeGlobals() {
  ValueDict g;
  g.set("range", Value::function(range));
  g.set("namespace", Value::function([](const CallArgs& args) -> absl::StatusOr<Value> {
          return Value::makeNamespace(kwargsDict(args));
        }));
  g.set("dict", Value::function([](const CallArgs& args) -> absl::StatusOr<Value> {
          return Value::dict(kwargsDict(args));
        }));
  g.set("raise_exception", Value::function([](const CallArgs& args) -> absl::StatusOr<Value> {
          const Value* msg = args.get(0, "message");
          return absl::InvalidArgumentError(msg != nullptr ? msg->toStr() : "");
        }));
  g.set("strftime_now", Value::function([](const CallArgs& args) -> absl::StatusOr<Value> {
          const Value* fmt = args.get(0, "format");
          if (fmt == nullptr || !fmt->isString()) return typeError("strftime_now expects a format string");
          std::time_t now = std::time(nullptr);
          std::tm tm{};
          localtime_r(&now, &tm);
          char buf[512];
          size_t n = std::strftime(buf, sizeof(buf), fmt->str().c_str(), &tm);
          return Value(std::string(buf, n));
        }));
  return g;
}

absl::StatusOr<bool> pyContains(const Value& haystack, const Value& needle) {
  switch (haystack.kind()) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!needle.isString()) {
        return typeError(absl::StrCat("'in <string>' requires string as left operand, not ",
                                      needle.typeName()));
      }
      return haystack.str().find(needle.str()) != std::string::npos;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
      for (const Value& v : haystack.items()) {
        if (v.equals(needle)) return true;
      }
      return false;
    case Value::Kind::kDict:
      return needle.isString() && haystack.dictRef().find(needle.str()) != nullptr;
    default:
      return typeError(absl::StrCat("argument of type '", haystack.typeName(), "' is not iterable"));
  }
}

absl::StatusOr<Value> pyPercentFormat(const std::string& fmt, const Value& args) {
  ValueList items = args.isTuple() ? args.items() : ValueList{args};
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i]);
      continue;
    }
    if (++i >= fmt.size()) return typeError("incomplete format");
    char c = fmt[i];
    if (c == '%') {
      out.push_back('%');
      continue;
    }
    if (next >= items.size()) return typeError("not enough arguments for format string");
    const Value& v = items[next++];
    if (c == 's') {
      out += v.toStr();
    } else if (c == 'r') {
      out += v.repr();
    } else if ((c == 'd' || c == 'i') && v.isNumber()) {
      out += std::to_string(v.isFloat() ? static_cast<int64_t>(v.asDouble()) : v.asInt());
    } else if (c == 'f' && v.isNumber()) {
      out += absl::StrFormat("%f", v.asDouble());
    } else {
      return typeError(absl::StrCat("unsupported format character '", std::string(1, c), "'"));
    }
  }
  if (next < items.size()) return typeError("not all arguments converted during string formatting");
  return Value(std::move(out));
}

absl::StatusOr<Value> pyStrFormat(const std::string& fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < fmt.size(); ++i) {
    char c = fmt[i];
    if ((c == '{' || c == '}') && i + 1 < fmt.size() && fmt[i + 1] == c) {
      out.push_back(c);
      ++i;
      continue;
    }
    if (c != '{') {
      out.push_back(c);
      continue;
    }
    size_t close = fmt.find('}', i);
    if (close == std::string::npos) return typeError("Single '{' encountered in format string");
    std::string field = fmt.substr(i + 1, close - i - 1);
    if (field.find(':') != std::string::npos || field.find('!') != std::string::npos) {
      return typeError("format specs are not supported");
    }
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_index < args.args.size() ? &args.args[auto_index] : nullptr;
      ++auto_index;
    } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
      size_t idx = std::stoul(field);
      v = idx < args.args.size() ? &args.args[idx] : nullptr;
    } else {
      for (const auto& [k, kv] : args.kwargs) {
        if (k == field) v = &kv;
      }
    }
    if (v == nullptr) return typeError(absl::StrCat("format: missing argument '", field, "'"));
    out += v->toStr();
    i = close;
  }
  return Value(std::move(out));
}

}  // namespace tandem::chat
