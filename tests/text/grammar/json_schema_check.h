// A JSON Schema validator for the subset text/grammar compiles, written
// independently of the compiler so tests can check generated output
// against the schema's meaning (not against the grammar that made it).
#pragma once

#include <cmath>
#include <set>
#include <string>

#include "nlohmann/json.hpp"

namespace tandem::grammar::testing {

// "" when `value` is valid under `schema` (refs resolved in `root`),
// otherwise what is wrong.
inline std::string schemaViolation(const nlohmann::ordered_json& schema,
                                   const nlohmann::ordered_json& value,
                                   const nlohmann::ordered_json& root) {
  using Json = nlohmann::ordered_json;
  if (schema.is_boolean()) return schema.get<bool>() ? "" : "false schema";
  if (auto it = schema.find("$ref"); it != schema.end()) {
    const Json* node = &root;
    std::string ptr = it->get<std::string>().substr(1);
    size_t pos = 0;
    while (pos < ptr.size()) {
      size_t next = ptr.find('/', pos + 1);
      std::string key = ptr.substr(pos + 1, next == std::string::npos ? std::string::npos : next - pos - 1);
      node = &(*node)[key];
      pos = next == std::string::npos ? ptr.size() : next;
    }
    return schemaViolation(*node, value, root);
  }
  if (auto it = schema.find("const"); it != schema.end() && *it != value) return "const";
  if (auto it = schema.find("enum"); it != schema.end()) {
    bool found = false;
    for (const Json& v : *it) found = found || v == value;
    if (!found) return "enum";
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (auto it = schema.find(key); it != schema.end()) {
      bool any = false;
      for (const Json& s : *it) any = any || schemaViolation(s, value, root).empty();
      if (!any) return key;
    }
  }
  if (auto it = schema.find("allOf"); it != schema.end()) {
    for (const Json& s : *it) {
      if (std::string v = schemaViolation(s, value, root); !v.empty()) return v;
    }
  }
  if (auto it = schema.find("type"); it != schema.end()) {
    auto is = [&value](const std::string& t) {
      if (t == "object") return value.is_object();
      if (t == "array") return value.is_array();
      if (t == "string") return value.is_string();
      if (t == "integer") return value.is_number_integer() ||
                                 (value.is_number_float() && std::floor(value.get<double>()) ==
                                                                 value.get<double>());
      if (t == "number") return value.is_number();
      if (t == "boolean") return value.is_boolean();
      if (t == "null") return value.is_null();
      return false;
    };
    bool ok = false;
    if (it->is_string()) ok = is(it->get<std::string>());
    for (const Json& t : it->is_array() ? *it : Json::array()) ok = ok || is(t.get<std::string>());
    if (!ok) return "type " + it->dump() + " for " + value.dump();
  }
  if (value.is_object()) {
    const Json props = schema.value("properties", Json::object());
    for (const Json& r : schema.value("required", Json::array())) {
      if (!value.contains(r.get<std::string>())) return "missing " + r.dump();
    }
    for (const auto& [k, v] : value.items()) {
      if (props.contains(k)) {
        if (std::string e = schemaViolation(props[k], v, root); !e.empty()) return k + ": " + e;
      } else if (auto add = schema.find("additionalProperties"); add != schema.end()) {
        if (std::string e = schemaViolation(*add, v, root); !e.empty()) return k + ": " + e;
      } else if (schema.contains("properties")) {
        return "unexpected property " + k;
      }
    }
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) return "minItems";
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) return "maxItems";
    size_t i = 0;
    if (auto prefix = schema.find("prefixItems"); prefix != schema.end()) {
      for (; i < prefix->size() && i < value.size(); ++i) {
        if (std::string e = schemaViolation((*prefix)[i], value[i], root); !e.empty()) return e;
      }
    }
    if (auto items = schema.find("items"); items != schema.end()) {
      for (; i < value.size(); ++i) {
        if (std::string e = schemaViolation(*items, value[i], root); !e.empty()) return e;
      }
    }
  }
  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    size_t cps = 0;
    for (unsigned char c : s) cps += (c & 0xC0) != 0x80;
    if (schema.contains("minLength") && cps < schema["minLength"].get<size_t>()) return "minLength";
    if (schema.contains("maxLength") && cps > schema["maxLength"].get<size_t>()) return "maxLength";
  }
  if (value.is_number()) {
    const double x = value.get<double>();
    if (schema.contains("minimum") && x < schema["minimum"].get<double>()) return "minimum";
    if (schema.contains("maximum") && x > schema["maximum"].get<double>()) return "maximum";
    if (schema.contains("exclusiveMinimum") && x <= schema["exclusiveMinimum"].get<double>()) return "exclusiveMinimum";
    if (schema.contains("exclusiveMaximum") && x >= schema["exclusiveMaximum"].get<double>()) return "exclusiveMaximum";
  }
  return "";
}

}  // namespace tandem::grammar::testing
