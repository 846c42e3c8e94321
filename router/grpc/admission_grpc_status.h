// The gRPC form of an admission failure (the HTTP form is
// router/generate/admission_api_error.h): kUnauthenticated is
// UNAUTHENTICATED, kNotReady and kDraining UNAVAILABLE, kOverloaded
// RESOURCE_EXHAUSTED (HTTP's 429), kRateLimited RESOURCE_EXHAUSTED too (with
// `retry-after` metadata), kUnknownModel NOT_FOUND, the request's own
// faults (prompt, lengths, size, params) INVALID_ARGUMENT. The message is
// kept.
#pragma once

#include "grpcpp/server_context.h"
#include "grpcpp/support/status.h"
#include "router/generate/admission.h"

namespace tandem::router {

grpc::Status toGrpcStatus(const AdmissionError& error);

// a refusal that says when to retry (kRateLimited) adds trailing metadata
// `retry-after`: whole seconds, as HTTP's Retry-After header. Call before
// the call finishes.
void addRetryAfter(const AdmissionError& error, grpc::ServerContextBase* context);

}  // namespace tandem::router
