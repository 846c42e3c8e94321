#include "router/grpc/admission_grpc_status.h"

#include <string>

namespace tandem::router {

grpc::Status toGrpcStatus(const AdmissionError& error) {
  grpc::StatusCode code = grpc::StatusCode::INVALID_ARGUMENT;
  switch (error.reason) {
    case AdmissionReason::kUnauthenticated: code = grpc::StatusCode::UNAUTHENTICATED; break;
    case AdmissionReason::kNotReady:
    case AdmissionReason::kDraining: code = grpc::StatusCode::UNAVAILABLE; break;
    case AdmissionReason::kRateLimited:
    case AdmissionReason::kOverloaded: code = grpc::StatusCode::RESOURCE_EXHAUSTED; break;
    case AdmissionReason::kUnknownModel: code = grpc::StatusCode::NOT_FOUND; break;
    case AdmissionReason::kEmptyPrompt:
    case AdmissionReason::kInvalidPrompt:
    case AdmissionReason::kPromptTooLong:
    case AdmissionReason::kContextLengthExceeded:
    case AdmissionReason::kRequestTooLarge:
    case AdmissionReason::kInvalidRequest: code = grpc::StatusCode::INVALID_ARGUMENT; break;
  }
  return grpc::Status(code, error.message);
}

void addRetryAfter(const AdmissionError& error, grpc::ServerContextBase* context) {
  if (error.retry_after_s <= 0 || context == nullptr) return;
  context->AddTrailingMetadata("retry-after", std::to_string(error.retry_after_s));
}

}  // namespace tandem::router
