// Python's json.dumps as HF's tojson filter calls it:
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
// sort_keys=sort_keys), so ', ' and ': ' separate items without indent.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "text/chat/value.h"

namespace tandem::chat {

struct PyJsonOptions {
  // null: one line; a number of spaces or an explicit indent string.
  std::optional<std::string> indent;
  bool sort_keys = false;
  // overrides python's defaults (', ' or ',' with indent, and ': ').
  std::optional<std::string> item_separator;
  std::optional<std::string> key_separator;
};

// InvalidArgument for values json cannot hold (undefined, functions).
absl::StatusOr<std::string> pyJsonDumps(const Value& v, const PyJsonOptions& options);

}  // namespace tandem::chat
