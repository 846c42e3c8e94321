// Typed reading of the optional fields of a JSON request body, with the
// OpenAI API's conventions: an absent field and a null one both mean "not
// given", ints are accepted where a float is expected, and a field of the
// wrong type is a 400 that names it in `param`.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "nlohmann/json.hpp"
#include "router/openai/api_error.h"

namespace tandem::openai {

// the largest value an int32 request field (max_tokens, a token id) may take.
inline constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// deeper request bodies are refused before they are built: copying or
// printing a JSON value recurses once per level, and no real request (tool
// schemas included) nests anywhere near this.
inline constexpr int kMaxJsonDepth = 128;

// `text` as JSON (key order kept), or what is wrong with it in words:
// "invalid JSON: ..." (nlohmann's message without its internal id), or
// "nests deeper than <kMaxJsonDepth> levels" (the deeper part is never
// built). For JSON that arrives inside a string (a gRPC request's schema).
std::variant<nlohmann::ordered_json, std::string> parseBoundedJson(std::string_view text);

// a request body as a JSON object (key order kept), or the 400 to answer:
// invalid JSON, nesting deeper than kMaxJsonDepth (parseBoundedJson), or a
// value that is not an object.
std::variant<nlohmann::ordered_json, ApiError> parseJsonObject(std::string_view body);

// `value` as an integer when it is one: a JSON integer, or a float with no
// fractional part (what pydantic's lax mode accepts), within int64 range.
// Booleans, strings and fractional numbers are nullopt.
std::optional<int64_t> asInteger(const nlohmann::ordered_json& value);

// Reads fields of one JSON object. The first error is kept and later ones
// are dropped, the way a stream's fail bit works: a parser reads every field
// in one pass and checks failed() once at the end, and the client hears
// about the first problem in reading order. Reads after a failure still
// return what they find, so the parser never has to branch on failed()
// midway.
class FieldReader {
 public:
  // `object` must be a JSON object and outlive the reader. `prefix` names
  // where it sits in the body ("stream_options.") and starts every `param`
  // and message this reader records.
  explicit FieldReader(const nlohmann::ordered_json& object, std::string prefix = "")
      : object_(object), prefix_(std::move(prefix)) {}

  // the value of `name`, or nullptr when it is absent or null.
  const nlohmann::ordered_json* find(std::string_view name) const;

  // each returns nullopt when the field is absent or null, and also (after
  // recording a 400 naming the field) when it has the wrong type.
  std::optional<bool> readBool(std::string_view name);
  std::optional<std::string> readString(std::string_view name);
  // any JSON number.
  std::optional<double> readNumber(std::string_view name);
  // an integer (see asInteger) in [min, max]; outside is a 400 that says
  // the range.
  std::optional<int64_t> readInt(std::string_view name, int64_t min, int64_t max);
  // an object / an array; nullptr when absent, null or of another type.
  const nlohmann::ordered_json* readObject(std::string_view name);
  const nlohmann::ordered_json* readArray(std::string_view name);

  // records a 400 about `param` (a field of this object; the prefix is
  // added) unless an error is already recorded. `message` is used as is.
  void fail(std::string_view param, std::string message);
  // keeps `other`'s error, if it has one, unless one is already recorded:
  // how a nested object's reader reports through its parent's.
  void absorb(const FieldReader& other);

  bool failed() const { return error_.has_value(); }
  // the first error recorded; only meaningful when failed().
  const openai::ApiError& error() const { return *error_; }

 private:
  // records "`name` must be <expected>, got <type>".
  void failType(std::string_view name, std::string_view expected,
                const nlohmann::ordered_json& got);

  // prefix_ + name: how the client knows the field.
  std::string path(std::string_view name) const;

  const nlohmann::ordered_json& object_;
  std::string prefix_;
  std::optional<openai::ApiError> error_;
};

}  // namespace tandem::openai
