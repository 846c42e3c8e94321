#include "text/chat/filters.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "text/chat/builtins.h"
#include "text/chat/py_json.h"
#include "text/chat/unicode.h"

namespace tandem::chat {
namespace {

absl::Status filterError(const std::string& msg) { return absl::InvalidArgumentError(msg); }

bool boolArg(const CallArgs& args, size_t pos, const char* name, bool def) {
  const Value* v = args.get(pos, name);
  return v == nullptr ? def : v->truthy();
}

absl::StatusOr<int64_t> length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(decodeUtf8(v.str()).size());
    case Value::Kind::kList:
    case Value::Kind::kTuple: return static_cast<int64_t>(v.items().size());
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: return static_cast<int64_t>(v.dictRef().items.size());
    default: return filterError(absl::StrCat("object of type '", v.typeName(), "' has no len()"));
  }
}

// sort key for case-insensitive comparisons, as jinja's ignore_case.
Value foldCase(const Value& v, bool case_sensitive) {
  return !case_sensitive && v.isString() ? Value(pyLower(v.str())) : v;
}

absl::Status sortValues(ValueList& items, bool reverse,
                        const std::function<Value(const Value&)>& key) {
  absl::Status err;
  std::vector<std::pair<Value, Value>> keyed;
  for (const Value& v : items) keyed.emplace_back(key(v), v);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    absl::StatusOr<bool> r = reverse ? Value::less(b.first, a.first) : Value::less(a.first, b.first);
    if (!r.ok()) {
      if (err.ok()) err = r.status();
      return false;
    }
    return *r;
  });
  RETURN_IF_ERROR(err);
  items.clear();
  for (auto& kv : keyed) items.push_back(std::move(kv.second));
  return absl::OkStatus();
}

// jinja's do_title: words start after whitespace, '-', and opening brackets.
std::string jinjaTitle(const std::string& s) {
  std::vector<char32_t> cps = decodeUtf8(s);
  bool word_start = true;
  for (char32_t& cp : cps) {
    bool sep = isPySpace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (sep) {
      word_start = true;
    } else {
      cp = word_start ? toUpper(cp) : toLower(cp);
      word_start = false;
    }
  }
  return encodeUtf8(cps);
}

std::string htmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string indentText(const std::string& text, const std::string& pad, bool first, bool blank) {
  std::vector<std::string> lines;
  size_t start = 0;
  std::string s = text + "\n";
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\n' || s[i] == '\r') {
      lines.push_back(s.substr(start, i - start));
      if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  std::string rv;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) rv += "\n";
    if (i > 0 && (blank || !lines[i].empty())) rv += pad;
    rv += lines[i];
  }
  if (first) rv = pad + rv;
  return rv;
}

absl::StatusOr<Value> selectOrReject(const Value& input, const CallArgs& args, bool by_attr,
                                     bool select) {
  ASSIGN_OR_RETURN(ValueList items, iterateValue(input));
  size_t next = 0;
  std::string attr;
  if (by_attr) {
    if (args.args.empty() || !args.args[0].isString()) return filterError("selectattr needs an attribute name");
    attr = args.args[0].str();
    next = 1;
  }
  std::string test;
  CallArgs test_args;
  if (next < args.args.size()) {
    test = args.args[next].toStr();
    test_args.args.assign(args.args.begin() + next + 1, args.args.end());
  }
  ValueList out;
  for (const Value& item : items) {
    Value v = by_attr ? getAttributePath(item, attr) : item;
    bool ok;
    if (test.empty()) {
      ok = v.truthy();
    } else {
      ASSIGN_OR_RETURN(ok, applyTest(test, v, test_args));
    }
    if (ok == select) out.push_back(item);
  }
  return Value::list(std::move(out));
}

absl::StatusOr<Value> mapFilter(const Value& input, const CallArgs& args) {
  ASSIGN_OR_RETURN(ValueList items, iterateValue(input));
  ValueList out;
  const Value* attr = nullptr;
  const Value* def = nullptr;
  for (const auto& [k, v] : args.kwargs) {
    if (k == "attribute") attr = &v;
    if (k == "default") def = &v;
  }
  if (attr != nullptr) {
    for (const Value& item : items) {
      Value v = getAttributePath(item, attr->toStr());
      out.push_back(v.isUndefined() && def != nullptr ? *def : v);
    }
    return Value::list(std::move(out));
  }
  if (args.args.empty()) return filterError("map requires a filter name or attribute=");
  std::string filter = args.args[0].toStr();
  CallArgs rest;
  rest.args.assign(args.args.begin() + 1, args.args.end());
  rest.kwargs = args.kwargs;
  for (const Value& item : items) {
    ASSIGN_OR_RETURN(Value v, applyFilter(filter, item, rest));
    out.push_back(std::move(v));
  }
  return Value::list(std::move(out));
}

absl::StatusOr<Value> toInt(const Value& v, const CallArgs& args) {
  const Value* defv = args.get(0, "default");
  Value def = defv != nullptr ? *defv : Value(int64_t{0});
  int base = static_cast<int>(args.get(1, "base") ? args.get(1, "base")->asInt() : 10);
  if (v.isInt() || v.isBool()) return Value(v.asInt());
  if (v.isFloat()) return std::isfinite(v.asDouble()) ? Value(static_cast<int64_t>(v.asDouble())) : def;
  if (!v.isString()) return def;
  std::string s = pyStrip(v.str(), nullptr, true, true);
  char* end = nullptr;
  errno = 0;
  long long i = std::strtoll(s.c_str(), &end, base);
  if (!s.empty() && *end == '\0' && errno == 0) return Value(static_cast<int64_t>(i));
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0' && std::isfinite(d)) return Value(static_cast<int64_t>(d));
  return def;
}

absl::StatusOr<Value> toFloat(const Value& v, const CallArgs& args) {
  const Value* defv = args.get(0, "default");
  Value def = defv != nullptr ? *defv : Value(0.0);
  if (v.isNumber()) return Value(v.asDouble());
  if (!v.isString()) return def;
  std::string s = pyStrip(v.str(), nullptr, true, true);
  char* end = nullptr;
  double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0') return Value(d);
  return def;
}

absl::StatusOr<Value> roundFilter(const Value& v, const CallArgs& args) {
  if (!v.isNumber()) return filterError("round expects a number");
  int64_t precision = args.get(0, "precision") ? args.get(0, "precision")->asInt() : 0;
  std::string method = args.get(1, "method") ? args.get(1, "method")->toStr() : "common";
  double scale = std::pow(10.0, static_cast<double>(precision));
  double x = v.asDouble() * scale;
  double r;
  if (method == "ceil") {
    r = std::ceil(x);
  } else if (method == "floor") {
    r = std::floor(x);
  } else if (method == "common") {
    // python's round(): half to even
    if (v.isInt() || v.isBool()) return Value(v.asInt());
    r = std::nearbyint(x);
  } else {
    return filterError("method must be 'common', 'ceil' or 'floor'");
  }
  return Value(r / scale);
}

absl::StatusOr<Value> tojson(const Value& v, const CallArgs& args) {
  PyJsonOptions o;
  const Value* indent = args.get(0, "indent");
  if (indent != nullptr && !indent->isNone()) {
    o.indent = indent->isString() ? indent->str() : std::string(std::max<int64_t>(0, indent->asInt()), ' ');
  }
  if (const Value* sk = args.get(3, "sort_keys")) o.sort_keys = sk->truthy();
  if (const Value* seps = args.get(2, "separators"); seps != nullptr && seps->isSequenceLike() &&
                                                     seps->items().size() == 2) {
    o.item_separator = seps->items()[0].toStr();
    o.key_separator = seps->items()[1].toStr();
  }
  ASSIGN_OR_RETURN(std::string s, pyJsonDumps(v, o));
  return Value(std::move(s));
}


// --- the filters, one function each; filterTable() names them ---

using FilterFn = absl::StatusOr<Value> (*)(const Value& in, const CallArgs& args);

absl::StatusOr<Value> trimFilter(const Value& in, const CallArgs& args) {
  const Value* chars = args.get(0, "chars");
  return Value(pyStrip(in.toStr(), chars && chars->isString() ? &chars->str() : nullptr, true, true));
}

absl::StatusOr<Value> lengthFilter(const Value& in, const CallArgs&) {
  ASSIGN_OR_RETURN(int64_t n, length(in));
  return Value(n);
}

absl::StatusOr<Value> listFilter(const Value& in, const CallArgs&) {
  ASSIGN_OR_RETURN(ValueList items, iterateValue(in));
  return Value::list(std::move(items));
}

absl::StatusOr<Value> joinFilter(const Value& in, const CallArgs& args) {
  ASSIGN_OR_RETURN(ValueList items, iterateValue(in));
  const Value* sep = args.get(0, "d");
  const Value* attr = args.get(1, "attribute");
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i && sep) out += sep->toStr();
    out += (attr ? getAttributePath(items[i], attr->toStr()) : items[i]).toStr();
  }
  return Value(std::move(out));
}

absl::StatusOr<Value> upperFilter(const Value& in, const CallArgs&) { return Value(pyUpper(in.toStr())); }
absl::StatusOr<Value> lowerFilter(const Value& in, const CallArgs&) { return Value(pyLower(in.toStr())); }
absl::StatusOr<Value> titleFilter(const Value& in, const CallArgs&) { return Value(jinjaTitle(in.toStr())); }
absl::StatusOr<Value> capitalizeFilter(const Value& in, const CallArgs&) {
  return Value(pyCapitalize(in.toStr()));
}

absl::StatusOr<Value> replaceFilter(const Value& in, const CallArgs& args) {
  CallArgs sargs = args;
  return callMethod(Value(in.toStr()), "replace", sargs);
}

absl::StatusOr<Value> defaultFilter(const Value& in, const CallArgs& args) {
  const Value* def = args.get(0, "default_value");
  bool boolean = boolArg(args, 1, "boolean", false);
  if (in.isUndefined() || (boolean && !in.truthy())) return def ? *def : Value("");
  return in;
}

template <bool kFirst>
absl::StatusOr<Value> firstOrLastFilter(const Value& in, const CallArgs&) {
  ASSIGN_OR_RETURN(ValueList items, iterateValue(in));
  if (items.empty()) {
    return Value::undefined(absl::StrCat("no ", kFirst ? "first" : "last", " item, sequence was empty"));
  }
  return kFirst ? items.front() : items.back();
}

absl::StatusOr<Value> itemsFilter(const Value& in, const CallArgs&) {
  if (in.isUndefined()) return Value::list({});
  if (!in.isDict()) return filterError("items filter expects a mapping");
  return callMethod(in, "items", CallArgs{});
}

template <bool kByAttr, bool kSelect>
absl::StatusOr<Value> selectFilter(const Value& in, const CallArgs& args) {
  return selectOrReject(in, args, kByAttr, kSelect);
}

absl::StatusOr<Value> stringFilter(const Value& in, const CallArgs&) { return Value(in.toStr()); }

absl::StatusOr<Value> absFilter(const Value& in, const CallArgs&) {
  if (in.isFloat()) return Value(std::fabs(in.asDouble()));
  if (in.isInt() || in.isBool()) return Value(in.asInt() < 0 ? -in.asInt() : in.asInt());
  return filterError(absl::StrCat("bad operand type for abs(): '", in.typeName(), "'"));
}

absl::StatusOr<Value> reverseFilter(const Value& in, const CallArgs&) {
  if (in.isString()) {
    std::vector<char32_t> cps = decodeUtf8(in.str());
    std::reverse(cps.begin(), cps.end());
    return Value(encodeUtf8(cps));
  }
  ASSIGN_OR_RETURN(ValueList items, iterateValue(in));
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

absl::StatusOr<Value> sortFilter(const Value& in, const CallArgs& args) {
  ASSIGN_OR_RETURN(ValueList items, iterateValue(in));
  bool reverse = boolArg(args, 0, "reverse", false);
  bool cs = boolArg(args, 1, "case_sensitive", false);
  const Value* attr = args.get(2, "attribute");
  RETURN_IF_ERROR(sortValues(items, reverse, [&](const Value& v) {
    return foldCase(attr ? getAttributePath(v, attr->toStr()) : v, cs);
  }));
  return Value::list(std::move(items));
}

absl::StatusOr<Value> uniqueFilter(const Value& in, const CallArgs& args) {
  ASSIGN_OR_RETURN(ValueList items, iterateValue(in));
  bool cs = boolArg(args, 0, "case_sensitive", false);
  const Value* attr = args.get(1, "attribute");
  ValueList out, seen;
  for (const Value& v : items) {
    Value key = foldCase(attr ? getAttributePath(v, attr->toStr()) : v, cs);
    bool dup = false;
    for (const Value& s : seen) dup = dup || s.equals(key);
    if (dup) continue;
    seen.push_back(key);
    out.push_back(v);
  }
  return Value::list(std::move(out));
}

absl::StatusOr<Value> dictsortFilter(const Value& in, const CallArgs& args) {
  if (!in.isDict()) return filterError("dictsort expects a mapping");
  bool cs = boolArg(args, 0, "case_sensitive", false);
  std::string by = args.get(1, "by") ? args.get(1, "by")->toStr() : "key";
  bool reverse = boolArg(args, 2, "reverse", false);
  ASSIGN_OR_RETURN(Value pairs, callMethod(in, "items", CallArgs{}));
  ValueList items = pairs.items();
  size_t idx = by == "value" ? 1 : 0;
  RETURN_IF_ERROR(sortValues(items, reverse, [&](const Value& p) { return foldCase(p.items()[idx], cs); }));
  return Value::list(std::move(items));
}

absl::StatusOr<Value> indentFilter(const Value& in, const CallArgs& args) {
  const Value* width = args.get(0, "width");
  std::string pad = width == nullptr ? "    "
                    : width->isString() ? width->str()
                                        : std::string(std::max<int64_t>(0, width->asInt()), ' ');
  return Value(indentText(in.toStr(), pad, boolArg(args, 1, "first", false), boolArg(args, 2, "blank", false)));
}

absl::StatusOr<Value> safeFilter(const Value& in, const CallArgs&) { return in; }
absl::StatusOr<Value> escapeFilter(const Value& in, const CallArgs&) { return Value(htmlEscape(in.toStr())); }
absl::StatusOr<Value> pprintFilter(const Value& in, const CallArgs&) { return Value(in.repr()); }

absl::StatusOr<Value> formatFilter(const Value& in, const CallArgs& args) {
  Value tuple = Value::tuple(args.args);
  return pyPercentFormat(in.toStr(), tuple);
}

template <bool kMin>
absl::StatusOr<Value> minOrMaxFilter(const Value& in, const CallArgs& args) {
  ASSIGN_OR_RETURN(ValueList items, iterateValue(in));
  if (items.empty()) {
    return Value::undefined(absl::StrCat("no ", kMin ? "min" : "max", " item, sequence was empty"));
  }
  bool cs = boolArg(args, 0, "case_sensitive", false);
  const Value* attr = args.get(1, "attribute");
  RETURN_IF_ERROR(sortValues(items, false, [&](const Value& v) {
    return foldCase(attr ? getAttributePath(v, attr->toStr()) : v, cs);
  }));
  return kMin ? items.front() : items.back();
}

absl::StatusOr<Value> sumFilter(const Value& in, const CallArgs& args) {
  ASSIGN_OR_RETURN(ValueList items, iterateValue(in));
  const Value* attr = args.get(0, "attribute");
  const Value* start = args.get(1, "start");
  bool fl = start && start->isFloat();
  double f = start ? start->asDouble() : 0;
  int64_t i = start && !fl ? start->asInt() : 0;
  for (const Value& item : items) {
    Value v = attr ? getAttributePath(item, attr->toStr()) : item;
    if (!v.isNumber()) return filterError("sum expects numbers");
    fl = fl || v.isFloat();
    f += v.asDouble();
    i += v.isFloat() ? 0 : v.asInt();
  }
  return fl ? Value(f) : Value(i);
}

absl::StatusOr<Value> wordcountFilter(const Value& in, const CallArgs&) {
  return Value(static_cast<int64_t>(pySplitWhitespace(in.toStr(), -1).size()));
}

absl::StatusOr<Value> centerFilter(const Value& in, const CallArgs& args) {
  int64_t width = args.get(0, "width") ? args.get(0, "width")->asInt() : 80;
  std::string s = in.toStr();
  int64_t n = static_cast<int64_t>(decodeUtf8(s).size());
  if (width <= n) return Value(s);
  int64_t total = width - n, left = total / 2 + (total & width & 1);
  return Value(std::string(left, ' ') + s + std::string(total - left, ' '));
}

// jinja2's builtin filters by name (aliases share a function).
const absl::flat_hash_map<std::string_view, FilterFn>& filterTable() {
  static const auto* table = new absl::flat_hash_map<std::string_view, FilterFn>{
      {"abs", absFilter},
      {"capitalize", capitalizeFilter},
      {"center", centerFilter},
      {"count", lengthFilter},
      {"d", defaultFilter},
      {"default", defaultFilter},
      {"dictsort", dictsortFilter},
      {"e", escapeFilter},
      {"escape", escapeFilter},
      {"first", firstOrLastFilter<true>},
      {"float", toFloat},
      {"forceescape", escapeFilter},
      {"format", formatFilter},
      {"indent", indentFilter},
      {"int", toInt},
      {"items", itemsFilter},
      {"join", joinFilter},
      {"last", firstOrLastFilter<false>},
      {"length", lengthFilter},
      {"list", listFilter},
      {"lower", lowerFilter},
      {"map", mapFilter},
      {"max", minOrMaxFilter<false>},
      {"min", minOrMaxFilter<true>},
      {"pprint", pprintFilter},
      {"reject", selectFilter<false, false>},
      {"rejectattr", selectFilter<true, false>},
      {"replace", replaceFilter},
      {"reverse", reverseFilter},
      {"round", roundFilter},
      {"safe", safeFilter},
      {"select", selectFilter<false, true>},
      {"selectattr", selectFilter<true, true>},
      {"sort", sortFilter},
      {"string", stringFilter},
      {"sum", sumFilter},
      {"title", titleFilter},
      {"tojson", tojson},
      {"trim", trimFilter},
      {"unique", uniqueFilter},
      {"upper", upperFilter},
      {"wordcount", wordcountFilter},
  };
  return *table;
}

}  // namespace

Value getAttributePath(const Value& obj, const std::string& path) {
  Value cur = obj;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    if ((cur.isDict() || cur.isNamespace()) && !numeric) {
      const Value* v = cur.dictRef().find(part);
      if (v == nullptr) return Value::undefined(absl::StrCat("'dict object' has no attribute '", part, "'"));
      cur = *v;
    } else if (cur.isSequenceLike() && numeric) {
      size_t i = std::stoul(part);
      if (i >= cur.items().size()) return Value::undefined("index out of range");
      cur = cur.items()[i];
    } else {
      return Value::undefined(absl::StrCat("'", cur.typeName(), "' has no attribute '", part, "'"));
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

absl::StatusOr<Value> applyFilter(const std::string& name, const Value& in, const CallArgs& args) {
  const auto& table = filterTable();
  if (auto it = table.find(name); it != table.end()) return it->second(in, args);
  return filterError(absl::StrCat("no filter named '", name, "'"));
}

}  // namespace tandem::chat
