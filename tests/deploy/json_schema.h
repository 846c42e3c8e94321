// A JSON Schema validator for the subset the Kubernetes "standalone-strict"
// schemas use (tests/deploy/schemas): type (one or a list), properties,
// additionalProperties (false or a schema), required, items, enum, oneOf,
// format int32/int64, minLength/maxLength, pattern, minimum/maximum.
// Annotations (description, default, x-kubernetes-*, $schema) are ignored;
// any other keyword is reported as unsupported rather than passed over, so
// a schema this validator cannot check fails loudly.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace tandem::deploy_testing {

// every way `value` breaks `schema`, one line each ("spec.replicas: ..."),
// empty when it conforms. `where` prefixes the paths.
std::vector<std::string> validateJson(const nlohmann::json& schema, const nlohmann::json& value,
                                      const std::string& where = "");

}  // namespace tandem::deploy_testing
