// The names of worker.proto's enums where people see them: --role values on
// the command line and the role / kind labels of metrics. One function
// each; the wire carries the enums themselves.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "tandem/v1/worker.pb.h"

namespace tandem::rpc {

// "prefill" | "decode" | "both" ("unspecified" for anything else).
std::string_view workerRoleName(tandem::v1::WorkerRole role);
// the role a name names; InvalidArgument for any other name.
absl::StatusOr<tandem::v1::WorkerRole> parseWorkerRole(std::string_view name);
// a role a worker may have (prefill, decode or both).
bool isKnownWorkerRole(tandem::v1::WorkerRole role);

// "local" | "remote" | "remote_failed" | "served" ("" when unspecified).
std::string_view prefillKindName(tandem::v1::PrefillKind kind);

}  // namespace tandem::rpc
