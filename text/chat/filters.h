// jinja2's builtin filters and tests, with HF's tojson override, over Value.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "text/chat/value.h"

namespace tandem::chat {

// `input | name(args)`. Unknown filters and bad arguments are InvalidArgument.
absl::StatusOr<Value> applyFilter(const std::string& name, const Value& input,
                                  const CallArgs& args);

// `value is name(args)`. Unknown tests are InvalidArgument.
absl::StatusOr<bool> applyTest(const std::string& name, const Value& value, const CallArgs& args);

// jinja's attribute getter for filters: "a.b.0" walks dict keys and indexes;
// a missing step yields undefined.
Value getAttributePath(const Value& obj, const std::string& path);

}  // namespace tandem::chat
