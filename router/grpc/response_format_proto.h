// The structured-output grammar of a tandem.v1.GenerateRequest: its
// response_format compiled (json_object, json_schema), else its
// params.grammar checked, else "" (unconstrained).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "tandem/v1/inference.pb.h"

namespace tandem::router {

// InvalidArgument naming the problem: invalid schema JSON, an unsupported
// schema feature, a grammar syntax error (line and column).
absl::StatusOr<std::string> requestGrammar(const tandem::v1::GenerateRequest& request);

}  // namespace tandem::router
