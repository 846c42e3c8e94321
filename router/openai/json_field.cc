#include "router/openai/json_field.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tandem::openai {

using Json = nlohmann::ordered_json;

std::variant<Json, std::string> parseBoundedJson(std::string_view text) {
  bool too_deep = false;
  Json::parser_callback_t limit_depth = [&too_deep](int depth, Json::parse_event_t event,
                                                     Json&) {
    if ((event == Json::parse_event_t::object_start ||
         event == Json::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      too_deep = true;
      return false;  // drop the subtree: it is never built
    }
    return true;
  };
  Json json;
  try {
    json = Json::parse(text.begin(), text.end(), limit_depth);
  } catch (const Json::exception& e) {
    // every parse failure, not only parse_error: a number beyond double's
    // range (1e999) is out_of_range, and uncaught it ended the router (the
    // body is parsed on a preparing thread; found by fuzzing).
    // e.what() is "[json.exception.parse_error.101] parse error at ..."; the
    // bracketed id means nothing to a client. nlohmann reports parse errors
    // by exception; it is caught here so none leaves this module.
    std::string_view what = e.what();
    size_t id_end = what.find("] ");
    if (id_end != std::string_view::npos) what.remove_prefix(id_end + 2);
    return absl::StrCat("invalid JSON: ", std::string(what));
  }
  if (too_deep) return absl::StrCat("nests deeper than ", kMaxJsonDepth, " levels");
  return json;
}

std::variant<Json, ApiError> parseJsonObject(std::string_view body) {
  std::variant<Json, std::string> parsed = parseBoundedJson(body);
  if (auto* problem = std::get_if<std::string>(&parsed)) {
    if (problem->starts_with("invalid JSON")) return errorFor(400, std::move(*problem));
    return errorFor(400, absl::StrCat("the request body ", *problem));
  }
  Json& json = std::get<Json>(parsed);
  if (!json.is_object()) {
    return errorFor(400, absl::StrCat("the request body must be a JSON object, got ",
                                      json.type_name()));
  }
  return std::move(json);
}

std::optional<int64_t> asInteger(const Json& value) {
  if (value.is_number_unsigned()) {
    uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    double d = value.get<double>();
    // 2^63 is exact as a double; the range check keeps the cast defined.
    constexpr double kTwoPow63 = 9223372036854775808.0;
    if (d >= -kTwoPow63 && d < kTwoPow63 && std::trunc(d) == d) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

const Json* FieldReader::find(std::string_view name) const {
  auto it = object_.find(std::string(name));
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<bool> FieldReader::readBool(std::string_view name) {
  const Json* value = find(name);
  if (value == nullptr) return std::nullopt;
  if (!value->is_boolean()) {
    failType(name, "a boolean", *value);
    return std::nullopt;
  }
  return value->get<bool>();
}

std::optional<std::string> FieldReader::readString(std::string_view name) {
  const Json* value = find(name);
  if (value == nullptr) return std::nullopt;
  if (!value->is_string()) {
    failType(name, "a string", *value);
    return std::nullopt;
  }
  return value->get<std::string>();
}

std::optional<double> FieldReader::readNumber(std::string_view name) {
  const Json* value = find(name);
  if (value == nullptr) return std::nullopt;
  // is_number() is false for booleans, so `true` is not 1 here.
  if (!value->is_number()) {
    failType(name, "a number", *value);
    return std::nullopt;
  }
  return value->get<double>();
}

std::optional<int64_t> FieldReader::readInt(std::string_view name, int64_t min, int64_t max) {
  const Json* value = find(name);
  if (value == nullptr) return std::nullopt;
  std::optional<int64_t> integer = asInteger(*value);
  if (!integer) {
    if (value->is_number()) {
      fail(name, absl::StrCat(path(name), " must be an integer, got ", value->dump()));
    } else {
      failType(name, "an integer", *value);
    }
    return std::nullopt;
  }
  if (*integer < min || *integer > max) {
    fail(name, absl::StrCat(path(name), " must be in [", min, ", ", max, "], got ", *integer));
    return std::nullopt;
  }
  return integer;
}

const Json* FieldReader::readObject(std::string_view name) {
  const Json* value = find(name);
  if (value == nullptr) return nullptr;
  if (!value->is_object()) {
    failType(name, "an object", *value);
    return nullptr;
  }
  return value;
}

const Json* FieldReader::readArray(std::string_view name) {
  const Json* value = find(name);
  if (value == nullptr) return nullptr;
  if (!value->is_array()) {
    failType(name, "an array", *value);
    return nullptr;
  }
  return value;
}

void FieldReader::fail(std::string_view param, std::string message) {
  if (error_) return;
  error_ = openai::errorFor(400, std::move(message), path(param));
}

void FieldReader::absorb(const FieldReader& other) {
  if (error_ || !other.error_) return;
  error_ = other.error_;
}

void FieldReader::failType(std::string_view name, std::string_view expected, const Json& got) {
  fail(name, absl::StrCat(path(name), " must be ", std::string(expected), ", got ",
                          got.type_name()));
}

std::string FieldReader::path(std::string_view name) const { return prefix_ + std::string(name); }

}  // namespace tandem::openai
