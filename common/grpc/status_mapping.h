// The one mapping between absl::Status (tandem's request paths) and
// grpc::Status (what a gRPC peer sees); the OpenAI front end answers HTTP
// from typed admission reasons (router/generate/admission_api_error.h). absl and gRPC number their codes alike (both follow
// google.rpc.Code), so the plain conversions keep the code and the message;
// the one policy decision, how a refused submission reaches a client, is
// refusalToGrpc.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace tandem::grpc_util {

// the same code and message as a grpc::Status (OK stays OK).
grpc::Status toGrpcStatus(const absl::Status& status);
// the same code, the message prefixed by `what`: "what: message".
grpc::Status toGrpcStatus(const absl::Status& status, std::string_view what);
// the same code and message as an absl::Status (OK stays OK).
absl::Status toAbslStatus(const grpc::Status& status);

// how a generator's or an engine's refusal to take a request (nothing was
// started) reaches the gRPC client: Unavailable, and FailedPrecondition (the
// engine is stopping), become UNAVAILABLE (try again, elsewhere);
// ResourceExhausted stays RESOURCE_EXHAUSTED; anything else is the request's
// fault: INVALID_ARGUMENT. The message is kept.
grpc::Status refusalToGrpc(const absl::Status& status);

}  // namespace tandem::grpc_util
