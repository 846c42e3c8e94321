#include "text/grammar/json_schema_compiler.h"

#include <charconv>
#include <cmath>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "text/grammar/json_grammar_rules.h"

namespace tandem::grammar {
namespace {

using Json = nlohmann::ordered_json;

// true when `value` nests deeper than `limit` arrays and objects (walked
// with an explicit stack: the value may be far deeper than the C++ stack).
bool nestsDeeperThan(const Json& value, int limit) {
  std::vector<std::pair<const Json*, int>> pending = {{&value, 0}};
  while (!pending.empty()) {
    const auto [v, depth] = pending.back();
    pending.pop_back();
    if (!v->is_structured()) continue;
    if (depth >= limit) return true;
    for (const Json& child : *v) pending.push_back({&child, depth + 1});
  }
  return false;
}

// a JSON-pointer segment as an array index (digits only, within `size`).
std::optional<size_t> arrayIndex(std::string_view key, size_t size) {
  size_t index = 0;
  const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), index);
  if (key.empty() || error != std::errc() || end != key.data() + key.size() || index >= size) {
    return std::nullopt;
  }
  return index;
}

const std::set<std::string, std::less<>> kAnnotations = {
    "title",   "description", "default",  "examples",  "$schema",
    "$id",     "$comment",    "deprecated", "readOnly", "writeOnly"};
const std::set<std::string, std::less<>> kKeywords = {
    "type",     "properties", "required",  "additionalProperties", "items",
    "prefixItems", "minItems", "maxItems", "minLength", "maxLength",
    "format",   "minimum",    "maximum",   "exclusiveMinimum", "exclusiveMaximum",
    "enum",     "const",      "anyOf",     "oneOf",    "allOf",
    "$ref",     "$defs",      "definitions", "uniqueItems"};

std::string ruleSafe(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    out += ok ? c : '-';
    if (out.size() >= 24) break;
  }
  return out.empty() ? "x" : out;
}

// a JSON pointer segment, escaped (~0 ~1).
std::string pointerSegment(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

class SchemaCompiler {
 public:
  explicit SchemaCompiler(const Json& root) : root_(root) {}

  absl::StatusOr<std::string> compile(const JsonGrammarOptions& options) {
    if (nestsDeeperThan(root_, kMaxSchemaJsonDepth)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "JSON schema: the document nests deeper than ", kMaxSchemaJsonDepth, " levels"));
    }
    const std::string value = visit(root_, "#", 0);
    if (!status_.ok()) return status_;
    return render(options, value);
  }

  std::string render(const JsonGrammarOptions& options, const std::string& value) {
    std::vector<std::string> root;
    if (!options.prefix.empty()) root.push_back(gbnfLiteral(options.prefix));
    root.push_back(value);
    if (!options.suffix.empty()) root.push_back(gbnfLiteral(options.suffix));
    std::string out = absl::StrCat("root ::= ", absl::StrJoin(root, " "), "\n");
    for (const auto& [name, body] : rules_) absl::StrAppend(&out, name, " ::= ", body, "\n");
    return out;
  }

  // `name` of a fixed JSON rule, defined (with what it uses) once.
  std::string use(const std::string& name) {
    if (fixed_used_.insert(name).second) {
      const std::vector<std::string> deps =
          absl::StrSplit(json_rules::fixedRuleDeps(name), ' ', absl::SkipEmpty());
      for (const std::string& dep : deps) use(dep);
      rules_.push_back({name, *json_rules::fixedRule(name)});
    }
    return name;
  }

 private:
  void fail(std::string message) {
    if (status_.ok()) status_ = absl::InvalidArgumentError(std::move(message));
  }
  void unsupported(const std::string& what, const std::string& path) {
    fail(absl::StrCat("JSON schema: ", what, " at ", path, " is not supported"));
  }

  std::string define(std::string_view hint, std::string body) {
    std::string name = absl::StrCat(ruleSafe(hint), "-", ++counter_);
    rules_.push_back({name, std::move(body)});
    return name;
  }

  std::string literal(const Json& value) {
    return gbnfLiteral(value.dump(-1, ' ', false, Json::error_handler_t::replace));
  }

  // a GBNF expression for the values `schema` allows.
  std::string visit(const Json& schema, const std::string& path, int depth) {
    if (!status_.ok()) return "";
    if (depth > kMaxSchemaDepth) {
      fail(absl::StrCat("JSON schema nests deeper than ", kMaxSchemaDepth, " levels at ", path,
                        " ($refs followed included)"));
      return "";
    }
    if (++nodes_ > kMaxSchemaNodes) {
      fail(absl::StrCat("JSON schema has more than ", kMaxSchemaNodes, " schemas (at ", path,
                        "; properties, items and branches counted)"));
      return "";
    }
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return use("value");
      fail(absl::StrCat("JSON schema: the schema at ", path, " is false (it allows nothing)"));
      return "";
    }
    if (!schema.is_object()) {
      fail(absl::StrCat("JSON schema: the schema at ", path, " must be an object or a boolean, got ",
                        schema.type_name()));
      return "";
    }
    for (const auto& [key, value] : schema.items()) {
      if (kKeywords.contains(key) || kAnnotations.contains(key)) continue;
      unsupported(absl::StrCat("keyword '", key, "'"), path);
      return "";
    }
    if (schema.contains("uniqueItems") && schema["uniqueItems"] != false) {
      unsupported("keyword 'uniqueItems'", path);
      return "";
    }
    if (const auto it = schema.find("$ref"); it != schema.end()) {
      return ref(*it, schema, path, depth);
    }
    if (const auto it = schema.find("const"); it != schema.end()) return literal(*it);
    if (const auto it = schema.find("enum"); it != schema.end()) return enumeration(*it, path);
    for (const char* key : {"anyOf", "oneOf"}) {
      if (const auto it = schema.find(key); it != schema.end()) {
        return alternatives(*it, absl::StrCat(path, "/", key), depth);
      }
    }
    if (const auto it = schema.find("allOf"); it != schema.end()) {
      if (!it->is_array() || it->size() != 1) {
        unsupported("allOf with more than one schema", path);
        return "";
      }
      return visit((*it)[0], absl::StrCat(path, "/allOf/0"), depth + 1);
    }
    const auto type = schema.find("type");
    if (type == schema.end()) {
      if (schema.contains("properties") || schema.contains("required") ||
          schema.contains("additionalProperties")) {
        return object(schema, path, depth);
      }
      if (schema.contains("items") || schema.contains("prefixItems")) {
        return array(schema, path, depth);
      }
      return use("value");
    }
    if (type->is_string()) return typed(type->get<std::string>(), schema, path, depth);
    if (!type->is_array() || type->empty()) {
      fail(absl::StrCat("JSON schema: 'type' at ", path,
                        " must be a type name or a non-empty array of them"));
      return "";
    }
    std::vector<std::string> parts;
    for (const Json& t : *type) {
      if (!t.is_string()) {
        fail(absl::StrCat("JSON schema: 'type' at ", path, " must hold type names"));
        return "";
      }
      parts.push_back(typed(t.get<std::string>(), schema, path, depth));
    }
    return absl::StrCat("( ", absl::StrJoin(parts, " | "), " )");
  }

  std::string typed(const std::string& type, const Json& schema, const std::string& path,
                    int depth) {
    if (type == "object") return object(schema, path, depth);
    if (type == "array") return array(schema, path, depth);
    if (type == "string") return string(schema, path);
    if (type == "integer") return integer(schema, path);
    if (type == "number") return number(schema, path);
    if (type == "boolean") return use("boolean");
    if (type == "null") return use("null");
    fail(absl::StrCat("JSON schema: unknown type '", type, "' at ", path));
    return "";
  }

  // a reference's target is compiled one level deeper than the reference,
  // so a chain of $refs counts against kMaxSchemaDepth as nesting does.
  std::string ref(const Json& target, const Json& schema, const std::string& path, int depth) {
    for (const auto& [key, value] : schema.items()) {
      if (key != "$ref" && key != "$defs" && key != "definitions" && !kAnnotations.contains(key)) {
        unsupported(absl::StrCat("'", key, "' beside $ref"), path);
        return "";
      }
    }
    if (!target.is_string()) {
      fail(absl::StrCat("JSON schema: $ref at ", path, " must be a string"));
      return "";
    }
    const std::string pointer = target.get<std::string>();
    if (auto it = refs_.find(pointer); it != refs_.end()) return it->second;
    if (pointer.empty() || pointer[0] != '#') {
      unsupported(absl::StrCat("$ref '", pointer, "' (only local references, \"#...\")"), path);
      return "";
    }
    const Json* node = &root_;
    const std::vector<std::string> parts = absl::StrSplit(pointer.substr(1), '/', absl::SkipEmpty());
    for (const std::string& part : parts) {
      std::string key = absl::StrReplaceAll(part, {{"~1", "/"}, {"~0", "~"}});
      if (node->is_object() && node->contains(key)) {
        node = &(*node)[key];
      } else if (std::optional<size_t> index;
                 node->is_array() && (index = arrayIndex(key, node->size()))) {
        // (an index beyond size_t made std::stoul throw, which ended the
        // process)
        node = &(*node)[*index];
      } else {
        fail(absl::StrCat("JSON schema: $ref '", pointer, "' at ", path, " points at nothing"));
        return "";
      }
    }
    // named first, so a recursive reference finds it.
    const std::string name = absl::StrCat("ref-", ruleSafe(pointer.substr(pointer.rfind('/') + 1)),
                                          "-", ++counter_);
    refs_[pointer] = name;
    const size_t slot = rules_.size();
    rules_.push_back({name, ""});
    std::string body = visit(*node, pointer, depth + 1);
    rules_[slot].second = std::move(body);
    return name;
  }

  std::string enumeration(const Json& values, const std::string& path) {
    if (!values.is_array() || values.empty()) {
      fail(absl::StrCat("JSON schema: 'enum' at ", path, " must be a non-empty array"));
      return "";
    }
    if (values.size() > static_cast<size_t>(kMaxEnumValues)) {
      fail(absl::StrCat("JSON schema: 'enum' at ", path, " has ", values.size(),
                        " values; at most ", kMaxEnumValues, " are allowed"));
      return "";
    }
    std::vector<std::string> parts;
    for (const Json& v : values) parts.push_back(literal(v));
    return absl::StrCat("( ", absl::StrJoin(parts, " | "), " )");
  }

  std::string alternatives(const Json& schemas, const std::string& path, int depth) {
    if (!schemas.is_array() || schemas.empty()) {
      fail(absl::StrCat("JSON schema: ", path, " must be a non-empty array of schemas"));
      return "";
    }
    std::vector<std::string> parts;
    for (size_t i = 0; i < schemas.size(); ++i) {
      parts.push_back(visit(schemas[i], absl::StrCat(path, "/", i), depth + 1));
    }
    return absl::StrCat("( ", absl::StrJoin(parts, " | "), " )");
  }

  // a non-negative integer keyword, or nullopt (after fail) / absent.
  std::optional<int64_t> count(const Json& schema, const char* key, const std::string& path) {
    const auto it = schema.find(key);
    if (it == schema.end()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
        it->get<int64_t>() > 100000) {
      fail(absl::StrCat("JSON schema: '", key, "' at ", path,
                        " must be an integer in [0, 100000]"));
      return std::nullopt;
    }
    return it->get<int64_t>();
  }

  std::string object(const Json& schema, const std::string& path, int depth) {
    for (const char* key : {"minProperties", "maxProperties", "patternProperties"}) {
      if (schema.contains(key)) unsupported(absl::StrCat("keyword '", key, "'"), path);
    }
    std::vector<std::pair<std::string, std::string>> props;  // key literal, value expr
    std::vector<bool> required;
    absl::flat_hash_map<std::string, size_t> names;  // property -> index
    const auto properties = schema.find("properties");
    if (properties != schema.end()) {
      if (!properties->is_object()) {
        fail(absl::StrCat("JSON schema: 'properties' at ", path, " must be an object"));
        return "";
      }
      for (const auto& [key, sub] : properties->items()) {
        const std::string sub_path = absl::StrCat(path, "/properties/", pointerSegment(key));
        std::string value = visit(sub, sub_path, depth + 1);
        names.emplace(key, props.size());
        props.push_back({absl::StrCat(literal(Json(key)), " \":\" ws"), value});
      }
    }
    required.assign(props.size(), false);
    if (const auto it = schema.find("required"); it != schema.end()) {
      if (!it->is_array()) {
        fail(absl::StrCat("JSON schema: 'required' at ", path, " must be an array of names"));
        return "";
      }
      for (const Json& name : *it) {
        const auto found = name.is_string() ? names.find(name.get<std::string>()) : names.end();
        if (found == names.end()) {
          fail(absl::StrCat("JSON schema: 'required' at ", path, " names ", name.dump(),
                            ", which is not in 'properties'"));
          return "";
        }
        required[found->second] = true;
      }
    }
    std::string extra;  // one additional member, or empty when none allowed
    const auto additional = schema.find("additionalProperties");
    if (additional == schema.end() && properties == schema.end()) {
      return use("object");  // {"type": "object"}: any object.
    }
    if (additional != schema.end() && !(additional->is_boolean() && !additional->get<bool>())) {
      const std::string value =
          visit(*additional, absl::StrCat(path, "/additionalProperties"), depth + 1);
      extra = define("extra", absl::StrCat(use("string"), " \":\" ws ", value));
    }
    if (!status_.ok()) return "";
    use("ws");
    // first_k: properties k.. with none written yet; rest_k: after one.
    const size_t n = props.size();
    std::vector<std::string> first(n + 1);
    std::vector<std::string> rest(n + 1);
    rest[n] = extra.empty() ? "" : absl::StrCat("( \",\" ws ", extra, " )*");
    first[n] = extra.empty() ? "" : absl::StrCat("( ", extra, " ( \",\" ws ", extra, " )* )?");
    for (size_t k = n; k-- > 0;) {
      const std::string member = absl::StrCat(props[k].first, " ", props[k].second);
      const std::string rest_body = absl::StrCat("\",\" ws ", member, " ", rest[k + 1]);
      const std::string first_body = absl::StrCat(member, " ", rest[k + 1]);
      if (required[k]) {
        rest[k] = define("rest", rest_body);
        first[k] = define("first", first_body);
      } else {
        // "( a | b )" never leaves an empty alternative at the end of a line.
        rest[k] = define("rest", absl::StrCat("( ", rest_body, " | ", rest[k + 1], " )"));
        first[k] = define("first", absl::StrCat("( ", first_body, " | ", first[k + 1], " )"));
      }
    }
    return define("object", absl::StrCat("\"{\" ", first[0], " \"}\""));
  }

  std::string array(const Json& schema, const std::string& path, int depth) {
    if (schema.contains("contains")) unsupported("keyword 'contains'", path);
    const std::optional<int64_t> min = count(schema, "minItems", path);
    const std::optional<int64_t> max = count(schema, "maxItems", path);
    if (!status_.ok()) return "";
    if (min && max && *min > *max) {
      fail(absl::StrCat("JSON schema: minItems is above maxItems at ", path));
      return "";
    }
    use("ws");
    std::string item;
    bool items_allowed = true;
    if (const auto it = schema.find("items"); it != schema.end()) {
      if (it->is_boolean() && !it->get<bool>()) {
        items_allowed = false;
      } else {
        item = visit(*it, absl::StrCat(path, "/items"), depth + 1);
      }
    } else if (!schema.contains("prefixItems")) {
      item = use("value");
    } else {
      items_allowed = false;  // a tuple: only its items unless `items` says more.
    }
    if (const auto it = schema.find("prefixItems"); it != schema.end()) {
      if (min || max) {
        unsupported("minItems/maxItems with prefixItems", path);
        return "";
      }
      if (!it->is_array() || it->empty()) {
        fail(absl::StrCat("JSON schema: 'prefixItems' at ", path, " must be a non-empty array"));
        return "";
      }
      std::vector<std::string> parts;
      for (size_t i = 0; i < it->size(); ++i) {
        parts.push_back(visit((*it)[i], absl::StrCat(path, "/prefixItems/", i), depth + 1));
      }
      std::string body = absl::StrCat("\"[\" ", absl::StrJoin(parts, " \",\" ws "));
      if (items_allowed) absl::StrAppend(&body, " ( \",\" ws ", item, " )*");
      return define("tuple", absl::StrCat(body, " \"]\""));
    }
    if (!items_allowed || (max && *max == 0)) return define("array", "\"[]\"");
    const int64_t lo = min.value_or(0);
    const std::string more_max = max ? std::to_string(*max - 1) : "";
    std::string more;  // ("," ws item){a,b}
    const int64_t more_min = std::max<int64_t>(lo - 1, 0);
    more = absl::StrCat("( \",\" ws ", item, " ){", more_min, ",", more_max, "}");
    std::string items = absl::StrCat(item, " ", more);
    if (lo == 0) items = absl::StrCat("( ", items, " )?");
    return define("array", absl::StrCat("\"[\" ", items, " \"]\""));
  }

  std::string string(const Json& schema, const std::string& path) {
    if (schema.contains("pattern")) unsupported("keyword 'pattern'", path);
    const std::optional<int64_t> min = count(schema, "minLength", path);
    const std::optional<int64_t> max = count(schema, "maxLength", path);
    if (!status_.ok()) return "";
    if (const auto it = schema.find("format"); it != schema.end()) {
      const std::string format = it->is_string() ? it->get<std::string>() : it->dump();
      if (format != "date" && format != "time" && format != "date-time" && format != "uuid") {
        unsupported(absl::StrCat("string format '", format,
                                 "' (supported: date, time, date-time, uuid)"),
                    path);
        return "";
      }
      if (min || max) {
        unsupported(absl::StrCat("minLength/maxLength with format '", format, "'"), path);
        return "";
      }
      return absl::StrCat("\"\\\"\" ", use(format), " \"\\\"\"");
    }
    if (!min && !max) return use("string");
    if (min && max && *min > *max) {
      fail(absl::StrCat("JSON schema: minLength is above maxLength at ", path));
      return "";
    }
    return absl::StrCat("\"\\\"\" ", use("char"), "{", min.value_or(0), ",",
                        max ? std::to_string(*max) : "", "} \"\\\"\"");
  }

  // an integer-valued bound of `key`, nullopt when absent; `ok` false when
  // present but not usable.
  std::optional<int64_t> bound(const Json& schema, const char* key, const std::string& path,
                               bool integer_type) {
    const auto it = schema.find(key);
    if (it == schema.end()) return std::nullopt;
    if (!it->is_number()) {
      fail(absl::StrCat("JSON schema: '", key, "' at ", path, " must be a number"));
      return std::nullopt;
    }
    const double v = it->get<double>();
    const double limit = static_cast<double>(json_rules::kMaxMagnitude);
    if (!std::isfinite(v) || std::fabs(v) > limit) {
      unsupported(absl::StrCat("'", key, "' beyond +-", json_rules::kMaxMagnitude), path);
      return std::nullopt;
    }
    if (integer_type) {
      // the tightest integer bound.
      const bool lower = std::string_view(key).find("inimum") != std::string_view::npos;
      const bool exclusive = std::string_view(key).starts_with("exclusive");
      double b = lower ? std::ceil(v) : std::floor(v);
      if (exclusive && b == v) b += lower ? 1 : -1;
      return static_cast<int64_t>(b);
    }
    if (std::floor(v) != v || std::string_view(key).starts_with("exclusive")) {
      unsupported(absl::StrCat("'", key, "' ", it->dump(),
                               " on a number (only inclusive integer bounds are)"),
                  path);
      return std::nullopt;
    }
    return static_cast<int64_t>(v);
  }

  std::string integer(const Json& schema, const std::string& path) {
    if (schema.contains("multipleOf")) unsupported("keyword 'multipleOf'", path);
    std::optional<int64_t> lo = bound(schema, "minimum", path, true);
    std::optional<int64_t> hi = bound(schema, "maximum", path, true);
    if (auto x = bound(schema, "exclusiveMinimum", path, true)) lo = lo ? std::max(*lo, *x) : *x;
    if (auto x = bound(schema, "exclusiveMaximum", path, true)) hi = hi ? std::min(*hi, *x) : *x;
    if (!status_.ok()) return "";
    if (!lo && !hi) return use("integer");
    const int64_t a = lo.value_or(-json_rules::kMaxMagnitude);
    const int64_t b = hi.value_or(json_rules::kMaxMagnitude);
    if (a > b) {
      fail(absl::StrCat("JSON schema: no integer lies within the bounds at ", path));
      return "";
    }
    return define("int", json_rules::integerRange(a, b));
  }

  std::string number(const Json& schema, const std::string& path) {
    if (schema.contains("multipleOf")) unsupported("keyword 'multipleOf'", path);
    const std::optional<int64_t> lo = bound(schema, "minimum", path, false);
    const std::optional<int64_t> hi = bound(schema, "maximum", path, false);
    (void)bound(schema, "exclusiveMinimum", path, false);
    (void)bound(schema, "exclusiveMaximum", path, false);
    if (!status_.ok()) return "";
    if (!lo && !hi) return use("number");
    if (lo && hi && *lo > *hi) {
      fail(absl::StrCat("JSON schema: minimum is above maximum at ", path));
      return "";
    }
    use("frac");
    use("zero-frac");
    return define("num", json_rules::numberRange(lo, hi));
  }

  const Json& root_;
  absl::Status status_;
  std::vector<std::pair<std::string, std::string>> rules_;
  std::set<std::string> fixed_used_;
  absl::flat_hash_map<std::string, std::string> refs_;
  int counter_ = 0;
  // schemas visited, against kMaxSchemaNodes.
  int nodes_ = 0;
};

}  // namespace

std::string gbnfLiteral(std::string_view bytes) {
  std::string out = "\"";
  for (char c : bytes) {
    const auto b = static_cast<uint8_t>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (b < 0x20 || b == 0x7F) {
      absl::StrAppend(&out, "\\x", absl::Hex(b, absl::kZeroPad2));
    } else {
      out += c;  // UTF-8 passes through as is.
    }
  }
  out += '"';
  return out;
}

absl::StatusOr<std::string> compileJsonSchema(const nlohmann::ordered_json& schema,
                                              const JsonGrammarOptions& options) {
  return SchemaCompiler(schema).compile(options);
}

std::string jsonObjectGrammar(const JsonGrammarOptions& options) {
  const Json empty = Json::object();
  SchemaCompiler compiler(empty);
  return compiler.render(options, compiler.use("object"));
}

}  // namespace tandem::grammar
