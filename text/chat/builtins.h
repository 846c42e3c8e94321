// Python's methods on str and dict that templates call (`s.strip('\n')`,
// `d.items()`), and the global functions HF exposes to chat templates.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "text/chat/value.h"

namespace tandem::chat {

// true when `obj.name(...)` is a method call handled by callMethod.
bool hasMethod(const Value& obj, const std::string& name);
absl::StatusOr<Value> callMethod(const Value& obj, const std::string& name, const CallArgs& args);

// range, namespace, dict, raise_exception (InvalidArgument carrying the
// template's message) and strftime_now (local time).
ValueDict makeGlobals();

// python's `needle in haystack`.
absl::StatusOr<bool> pyContains(const Value& haystack, const Value& needle);
// python's printf-style `fmt % args` for %s, %r, %d, %i, %f and %%.
absl::StatusOr<Value> pyPercentFormat(const std::string& fmt, const Value& args);
// python's str.format for {}, {0} and {name} without format specs.
absl::StatusOr<Value> pyStrFormat(const std::string& fmt, const CallArgs& args);

}  // namespace tandem::chat
