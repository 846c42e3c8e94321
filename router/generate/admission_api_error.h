// The OpenAI HTTP form of an admission failure: its status (401, 404, 400,
// 429 — a key's rate limit as OpenAI: type "requests" or "tokens", code
// "rate_limit_exceeded", with its Retry-After —, 503; the gRPC form is router/grpc/admission_grpc_status.h) and error body, with code "context_length_exceeded" for a
// prompt that does not fit (the context or the server's prompt limit).
#pragma once

#include "router/generate/admission.h"
#include "router/openai/api_error.h"

namespace tandem::router {

openai::ApiError toApiError(const AdmissionError& error);

}  // namespace tandem::router
