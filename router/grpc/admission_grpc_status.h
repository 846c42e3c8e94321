// The gRPC form of an admission failure (the HTTP form is
// router/generate/admission_api_error.h): kUnauthenticated is
// UNAUTHENTICATED, kNotReady and kDraining UNAVAILABLE, kOverloaded
// RESOURCE_EXHAUSTED (HTTP's 429), kUnknownModel NOT_FOUND, the request's own
// faults (prompt, lengths, size, params) INVALID_ARGUMENT. The message is
// kept.
#pragma once

#include "grpcpp/support/status.h"
#include "router/generate/admission.h"

namespace tandem::router {

grpc::Status toGrpcStatus(const AdmissionError& error);

}  // namespace tandem::router
