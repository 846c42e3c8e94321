#include "tests/deploy/json_schema.h"

#include <limits>
#include <regex>
#include <set>

namespace tandem::deploy_testing {
namespace {

using nlohmann::json;

bool hasType(const json& value, const std::string& type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "integer") {
    return value.is_number_integer() ||
           (value.is_number_float() && value.get<double>() == static_cast<int64_t>(value.get<double>()));
  }
  if (type == "number") return value.is_number();
  return false;
}

std::string join(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

void validate(const json& schema, const json& value, const std::string& where,
              std::vector<std::string>* errors);

void checkType(const json& schema, const json& value, const std::string& where,
               std::vector<std::string>* errors, bool* ok) {
  const json& t = schema["type"];
  bool any = false;
  if (t.is_string()) {
    any = hasType(value, t.get<std::string>());
  } else {
    for (const json& one : t) any = any || hasType(value, one.get<std::string>());
  }
  if (!any) {
    errors->push_back(where + ": " + value.dump().substr(0, 80) + " is not of type " + t.dump());
    *ok = false;
  }
}

void checkObject(const json& schema, const json& value, const std::string& where,
                 std::vector<std::string>* errors) {
  if (schema.contains("required")) {
    for (const json& key : schema["required"]) {
      if (!value.contains(key.get<std::string>())) {
        errors->push_back(where + ": missing required " + key.get<std::string>());
      }
    }
  }
  const json empty = json::object();
  const json& properties = schema.contains("properties") ? schema["properties"] : empty;
  for (const auto& [key, child] : value.items()) {
    if (properties.contains(key)) {
      validate(properties[key], child, join(where, key), errors);
    } else if (schema.contains("additionalProperties")) {
      const json& extra = schema["additionalProperties"];
      if (extra.is_boolean()) {
        if (!extra.get<bool>()) errors->push_back(join(where, key) + ": not allowed here");
      } else {
        validate(extra, child, join(where, key), errors);
      }
    }
  }
}

void checkScalar(const json& schema, const json& value, const std::string& where,
                 std::vector<std::string>* errors) {
  if (schema.contains("enum")) {
    bool found = false;
    for (const json& option : schema["enum"]) found = found || option == value;
    if (!found) errors->push_back(where + ": " + value.dump() + " is not one of " + schema["enum"].dump());
  }
  if (value.is_string()) {
    const std::string s = value.get<std::string>();
    if (schema.contains("minLength") && s.size() < schema["minLength"].get<size_t>()) {
      errors->push_back(where + ": shorter than " + schema["minLength"].dump());
    }
    if (schema.contains("maxLength") && s.size() > schema["maxLength"].get<size_t>()) {
      errors->push_back(where + ": longer than " + schema["maxLength"].dump());
    }
    if (schema.contains("pattern") &&
        !std::regex_search(s, std::regex(schema["pattern"].get<std::string>(), std::regex::ECMAScript))) {
      errors->push_back(where + ": '" + s + "' does not match " + schema["pattern"].dump());
    }
  }
  if (value.is_number()) {
    const double v = value.get<double>();
    if (schema.contains("minimum") && v < schema["minimum"].get<double>()) {
      errors->push_back(where + ": below " + schema["minimum"].dump());
    }
    if (schema.contains("maximum") && v > schema["maximum"].get<double>()) {
      errors->push_back(where + ": above " + schema["maximum"].dump());
    }
    if (schema.contains("format") && schema["format"] == "int32" &&
        (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())) {
      errors->push_back(where + ": out of int32 range");
    }
  }
}

void validate(const json& schema, const json& value, const std::string& where,
              std::vector<std::string>* errors) {
  static const std::set<std::string> kChecked = {
      "type", "properties", "additionalProperties", "required", "items", "enum", "oneOf",
      "format", "minLength", "maxLength", "pattern", "minimum", "maximum"};
  static const std::set<std::string> kAnnotations = {"description", "default", "$schema", "title"};
  for (const auto& [key, unused] : schema.items()) {
    if (!kChecked.count(key) && !kAnnotations.count(key) && key.rfind("x-kubernetes-", 0) != 0) {
      errors->push_back(where + ": the schema uses '" + key + "', which this validator does not check");
    }
  }
  bool ok = true;
  if (schema.contains("type")) checkType(schema, value, where, errors, &ok);
  if (!ok) return;
  if (schema.contains("oneOf")) {
    int matches = 0;
    for (const json& option : schema["oneOf"]) {
      std::vector<std::string> sub;
      validate(option, value, where, &sub);
      if (sub.empty()) ++matches;
    }
    if (matches != 1) {
      errors->push_back(where + ": " + value.dump().substr(0, 80) + " matches " +
                        std::to_string(matches) + " of the oneOf schemas, not exactly one");
    }
  }
  if (value.is_object()) checkObject(schema, value, where, errors);
  if (value.is_array() && schema.contains("items")) {
    for (size_t i = 0; i < value.size(); ++i) {
      validate(schema["items"], value[i], where + "[" + std::to_string(i) + "]", errors);
    }
  }
  checkScalar(schema, value, where, errors);
}

}  // namespace

std::vector<std::string> validateJson(const json& schema, const json& value,
                                      const std::string& where) {
  std::vector<std::string> errors;
  validate(schema, value, where, &errors);
  return errors;
}

}  // namespace tandem::deploy_testing
