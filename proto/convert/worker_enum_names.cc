#include "proto/convert/worker_enum_names.h"

#include "absl/strings/str_cat.h"

namespace tandem::rpc {

std::string_view workerRoleName(tandem::v1::WorkerRole role) {
  switch (role) {
    case tandem::v1::WORKER_ROLE_PREFILL: return "prefill";
    case tandem::v1::WORKER_ROLE_DECODE: return "decode";
    case tandem::v1::WORKER_ROLE_BOTH: return "both";
    default: return "unspecified";
  }
}

absl::StatusOr<tandem::v1::WorkerRole> parseWorkerRole(std::string_view name) {
  for (tandem::v1::WorkerRole role :
       {tandem::v1::WORKER_ROLE_PREFILL, tandem::v1::WORKER_ROLE_DECODE, tandem::v1::WORKER_ROLE_BOTH}) {
    if (name == workerRoleName(role)) return role;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown worker role '", absl::string_view(name.data(), name.size()), "' (prefill, decode or both)"));
}

bool isKnownWorkerRole(tandem::v1::WorkerRole role) {
  return role == tandem::v1::WORKER_ROLE_PREFILL || role == tandem::v1::WORKER_ROLE_DECODE ||
         role == tandem::v1::WORKER_ROLE_BOTH;
}

std::string_view prefillKindName(tandem::v1::PrefillKind kind) {
  switch (kind) {
    case tandem::v1::PREFILL_KIND_LOCAL: return "local";
    case tandem::v1::PREFILL_KIND_REMOTE: return "remote";
    case tandem::v1::PREFILL_KIND_REMOTE_FAILED: return "remote_failed";
    case tandem::v1::PREFILL_KIND_SERVED: return "served";
    default: return "";
  }
}

}  // namespace tandem::rpc
