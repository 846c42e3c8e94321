#include "common/grpc/status_mapping.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace tandem::grpc_util {

grpc::Status toGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

grpc::Status toGrpcStatus(const absl::Status& status, std::string_view what) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      absl::StrCat(absl::string_view(what.data(), what.size()), ": ", status.message()));
}

absl::Status toAbslStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

grpc::Status refusalToGrpc(const absl::Status& status) {
  grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT;
  if (absl::IsUnavailable(status) || absl::IsFailedPrecondition(status)) {
    code = grpc::StatusCode::UNAVAILABLE;
  } else if (absl::IsResourceExhausted(status)) {
    code = grpc::StatusCode::RESOURCE_EXHAUSTED;
  }
  return grpc::Status(code, std::string(status.message()));
}

}  // namespace tandem::grpc_util
