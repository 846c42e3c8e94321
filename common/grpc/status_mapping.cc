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

int httpStatusFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kAborted: return 409;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kCancelled: return 499;
    case absl::StatusCode::kUnimplemented: return 501;
    case absl::StatusCode::kUnavailable: return 503;
    case absl::StatusCode::kDeadlineExceeded: return 504;
    default: return 500;
  }
}

}  // namespace tandem::grpc_util
